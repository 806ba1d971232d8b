"""The outside audit's gold probe, timed as a worker sees it: can the time a lease or a submit takes tell an
embedded gold question from a real one? Through gunicorn and PostgreSQL on loopback, with a broker configured
as in production (a gold answer's score is recorded for the outbox relay, never computed in the request).

Usage: python bench/gold_probe.py [--workers 12] [--leases 50] [--gunicorn-workers 2] [--keep-db]

The script creates (and at the end drops) its own PostgreSQL database, migrates it and sets up what the audit
found: one verification concept with a calibration table, gold items made before the real questions (20% gold
rate), and one worker with an API token per client. The clients lease and answer in turn (gold rightly, real at
random), so the machine's load falls on gold and real alike, and each request is timed on the client. It prints
the area under the ROC curve of lease and of submit times, gold against real (0.5: no better than chance;
either way from 0.5 is a tell), the medians, and the statements of one gold and one real submit measured
in-process (tests/security/test_gold_probe_stats.py asserts those are the same; this script asserts nothing).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from queue_throughput import (  # noqa: E402
    HOST,
    database_recreate,
    free_port,
    gunicorn_start,
    gunicorn_stop,
    server_env,
)

DB_NAME = os.environ.get("BENCH_DB_NAME", "cl_gold_probe")
GOLD_RATE = 0.2
WARM_UP = 2  # rounds per client not reported: each gunicorn worker loads the URL map and opens its connection


def auc(positive: list[float], negative: list[float]) -> float:
    """P(a positive sample exceeds a negative one), ties counting half: the Mann-Whitney U over n1 n2."""
    greater = sum((x > y) + (x == y) / 2 for x in positive for y in negative)
    return greater / (len(positive) * len(negative))


def data_create(n_workers: int, n_gold: int, n_real: int) -> tuple[list[str], dict[int, bool]]:
    """Migrate, then the audit's setting (with the gold tests' helpers); the tokens, and the gold tasks'
    answers by task id (read by the script, as the probe's ground truth; never by a client)."""
    import django
    from django.core.management import call_command

    django.setup()
    from annotation.models import Dataset
    from consensus import creation
    from consensus.models import ConsensusSettings, QuestionKind
    from crowd.services import token_for
    from gold.models import GoldItem, GoldSettings
    from hierarchy.models import Concept
    from tests.gold.conftest import gold_for, install_table, make_images, make_workers

    call_command("migrate", verbosity=0, interactive=False)
    dataset = Dataset.objects.create(name="gold-probe")
    concept = Concept.objects.create(wnid="n02123045", name="tabby cat", gloss="a cat with a striped coat")
    ConsensusSettings.objects.update_or_create(
        dataset=dataset,
        defaults={"vote_cap": 15, "calibration_votes": 5, "target_precision": 0.999, "estimator": "dynamic"},
    )
    install_table(concept)  # a table from simulated votes of workers 85% right
    images = make_images(dataset, n_gold + n_real)
    # Gold made before the real questions, as the audit found it: old gold among newer real tasks.
    gold_for(dataset, concept, images[:n_gold])
    creation.questions_create(
        dataset=dataset,
        kind=QuestionKind.IMAGE_VERIFY,
        concept=concept,
        targets=[creation.Target(image=i) for i in images[n_gold:]],
        calibration=[False] * n_real,
    )
    GoldSettings.objects.create(dataset=dataset, rate=GOLD_RATE, qualification_size=0, qualification_pass=0)
    tokens = [token_for(worker.user) for worker in make_workers(n_workers, prefix="probe-")]
    return tokens, dict(GoldItem.objects.values_list("task_id", "answer"))


def submit_statements(token: str) -> dict[bool, list[str]]:
    """The statements of the first gold and the first real submit of one worker, measured in-process."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Assignment
    from gold.serving import GOLD_POOL

    client = Client(HTTP_AUTHORIZATION=f"Token {token}")
    found: dict[bool, list[str]] = {}
    for _ in range(60):
        lease = client.get("/api/v1/tasks/next").json()
        gold = Assignment.objects.select_related("task").get(pk=lease["id"]).task.pool == GOLD_POOL
        with CaptureQueriesContext(connection) as captured:
            client.post(
                f"/api/v1/assignments/{lease['id']}/submit",
                {"answer": {"answer": True}},
                content_type="application/json",
                HTTP_IDEMPOTENCY_KEY=f"profile-{lease['id']}",
            )
        found.setdefault(gold, [q["sql"].split(None, 1)[0].upper() for q in captured.captured_queries])
        if len(found) == 2:
            break
    connection.close()
    return found


def probe(port: int, tokens: list[str], rounds: int, gold_answer: dict[int, bool], task_of) -> dict:
    """Each client in turn leases and answers; the times of each request (ms) by request and gold or not."""
    import random

    rng = random.Random(35)
    times: dict[tuple[str, bool], list[float]] = {
        (r, g): [] for r in ("lease", "submit") for g in (True, False)
    }
    connections = [http.client.HTTPConnection(HOST, port, timeout=30) for _ in tokens]
    for round_ in range(rounds + WARM_UP):
        for conn, token in zip(connections, tokens, strict=True):
            auth = {"Authorization": f"Token {token}"}
            started = time.perf_counter()
            conn.request("GET", "/api/v1/tasks/next", headers=auth)
            response = conn.getresponse()
            lease_ms = (time.perf_counter() - started) * 1000
            body = json.loads(response.read())
            if response.status != 200:
                raise SystemExit(f"lease answered {response.status}: {body}")
            task = task_of(body["id"])
            gold = task in gold_answer
            answer = gold_answer[task] if gold else rng.random() < 0.5
            payload = json.dumps({"answer": {"answer": answer}})
            started = time.perf_counter()
            conn.request(
                "POST",
                f"/api/v1/assignments/{body['id']}/submit",
                body=payload,
                headers={**auth, "Content-Type": "application/json", "Idempotency-Key": f"k{body['id']}"},
            )
            response = conn.getresponse()
            submit_ms = (time.perf_counter() - started) * 1000
            response.read()
            if response.status != 201:
                raise SystemExit(f"submit answered {response.status}")
            if round_ >= WARM_UP:
                times["lease", gold].append(lease_ms)
                times["submit", gold].append(submit_ms)
    for conn in connections:
        conn.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=12, help="clients, each a worker with a token")
    parser.add_argument("--leases", type=int, default=50, help="leases (and answers) per worker, reported")
    parser.add_argument("--gunicorn-workers", type=int, default=2)
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("BENCH_POSTGRES_URL", f"postgres://postgres@{HOST}:5432/postgres"),
        help="PostgreSQL URL of a database to connect to when creating and dropping the bench database",
    )
    parser.add_argument(
        "--broker-url",
        default=os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/9"),
        help="the broker the app records background work for (nothing consumes it during the run)",
    )
    parser.add_argument("--keep-db", action="store_true", help="leave the bench database for inspection")
    args = parser.parse_args()
    answers = args.workers * (args.leases + WARM_UP)
    n_real = answers + 100  # one vote each at most: no real question runs out of voters
    n_gold = max(40, int(n_real * GOLD_RATE))
    var_dir = tempfile.mkdtemp(prefix="crowdlabel-probe-")
    env = server_env(
        f"{args.admin_url.rsplit('/', 1)[0]}/{DB_NAME}", var_dir, CELERY_BROKER_URL=args.broker_url
    )
    os.environ.update(env)
    print(
        f"setting up {DB_NAME}: {n_gold} gold, {n_real} real questions, {args.workers} workers ...",
        flush=True,
    )
    database_recreate(args.admin_url, db_name=DB_NAME)
    gunicorn = None
    try:
        tokens, gold_answer = data_create(args.workers, n_gold, n_real)
        statements = submit_statements(tokens[-1])
        from annotation.models import Assignment

        def task_of(assignment_id: int) -> int:
            return Assignment.objects.values_list("task_id", flat=True).get(pk=assignment_id)

        port = free_port()
        with open(os.path.join(var_dir, "gunicorn.log"), "w") as log:
            gunicorn = gunicorn_start(port, env, args.gunicorn_workers, "sync", log)
            times = probe(port, tokens[:-1], args.leases, gold_answer, task_of)
    finally:
        if gunicorn is not None:
            gunicorn_stop(gunicorn)
        if not args.keep_db:
            from django.db import connections

            connections.close_all()
            database_recreate(args.admin_url, drop_only=True, db_name=DB_NAME)
    print()
    print(
        f"gunicorn ({args.gunicorn_workers} sync workers) + PostgreSQL on loopback, {args.leases} leases per worker"
    )
    print(
        f"| {'request':<7} | {'gold n':>6} | {'real n':>6} | {'gold median ms':>14} | {'real median ms':>14} | AUC   |"
    )
    print(f"|{'-' * 9}|{'-' * 8}|{'-' * 8}|{'-' * 16}|{'-' * 16}|-------|")
    for request in ("lease", "submit"):
        gold, real = times[request, True], times[request, False]
        print(
            f"| {request:<7} | {len(gold):>6} | {len(real):>6} | {statistics.median(gold):>14.2f} | "
            f"{statistics.median(real):>14.2f} | {auc(gold, real):.3f} |"
        )
    print()
    for gold, names in sorted(statements.items(), reverse=True):
        print(f"{'gold' if gold else 'real'} submit, in-process: {len(names)} statements: {' '.join(names)}")


if __name__ == "__main__":
    main()
