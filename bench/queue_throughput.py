"""Queue throughput: next-task + submit cycles per second on PostgreSQL under gunicorn, measured against a
trivial Django JSON view (GET /healthz) served by the same gunicorn in the same run as the ceiling, and against
the smallest authenticated API request (GET /api/v1/me: token lookup and one read) as a second reference.

Usage: python bench/queue_throughput.py [--quick] [--levels 1,8,32] [--procs 2] [--worker-class sync] [--bundle 10]

Each level also runs chained cycles, the worker page's path: one POST .../submit?next=true per task, which
stores the answer and leases the next task in the same transaction (a task cycle in one request; the chain's
first lease is a GET /api/v1/tasks/next, timed with it).

With `--bundle N` each level also runs bundle cycles: GET /api/v1/tasks/next?count=N leases N tasks and one
POST /api/v1/assignments/submit stores their N answers; a task cycle is one task leased and answered, so the
bundle's cycles/s count tasks, and its p50/p99 are per request, beside the single-task path's.

The script creates (and at the end drops) its own PostgreSQL database, migrates it, creates one worker with an
API token per client and enough binary vote tasks (rows only: the clients never fetch image bytes), starts
gunicorn on a free loopback port, and drives it with several load-generator processes, each running one
thread per client on http.client connections. It prints figures and ratios; it asserts nothing.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))  # project modules are imported inside the setup functions
sys.path.insert(0, str(REPO_ROOT / "bench"))

from gunicorn_server import free_port, gunicorn_start, gunicorn_stop, server_env  # noqa: E402
from proc_cpu import postmaster_pid, tree_cpu_seconds  # noqa: E402

__all__ = [
    "free_port",
    "gunicorn_start",
    "gunicorn_stop",
    "server_env",
]  # other benches import them from here

# BENCH_DB_NAME lets two benches share one server without dropping each other's database.
DB_NAME = os.environ.get("BENCH_DB_NAME", "crowdlabel_bench")
HOST = "127.0.0.1"  # loopback only: the bench never listens on another interface
NEXT, SUBMIT, HEALTH, ME = "next", "submit", "healthz", "me"
NEXT_MANY, SUBMIT_MANY, BUNDLE = "next_n", "submit_n", "bundle"
CHAIN, SUBMIT_NEXT = "chain", "submit+next"
CYCLE_MODES = ("cycle", CHAIN, BUNDLE)
REFERENCE_PATHS = {HEALTH: "/healthz", ME: "/api/v1/me"}  # the references: one GET each, timed like a cycle

# Targets from the foundation issue, checked (not asserted) at the end.
TARGET_RATIO = 0.30
TARGET_P99_MS = 50.0
TARGET_LEVEL = 8
# Bundle targets (issue 38): task cycles/s with bundles of 10 at the target level, and p99 per request.
TARGET_BUNDLE_CYCLES = 1000.0
TARGET_BUNDLE_P99_MS = 100.0
# The single-task path's target (issue 38): task cycles/s at the target level.
TARGET_SINGLE_CYCLES = 250.0


# ---------------------------------------------------------------- load generator (runs in child processes)


@dataclass
class ClientResult:
    """What one generator process measured: latencies in ms per endpoint, errors by reason."""

    latencies: dict[str, list[float]] = field(
        default_factory=lambda: {
            NEXT: [],
            SUBMIT: [],
            HEALTH: [],
            ME: [],
            NEXT_MANY: [],
            SUBMIT_MANY: [],
            SUBMIT_NEXT: [],
        }
    )
    errors: Counter = field(default_factory=Counter)
    cycles: int = 0
    queue_empty: int = 0
    server_closed: int = 0  # responses after which the server closed the connection (no keep-alive)
    elapsed: float = 0.0
    cpu_seconds: float = 0.0


class _Client:
    """One simulated worker: a single http.client connection, reopened only when the server closes it."""

    def __init__(self, port: int, token: str | None, result: ClientResult, lock: threading.Lock):
        self.port = port
        self.headers = {"Authorization": f"Token {token}"} if token else {}
        self.result = result
        self.lock = lock
        self.conn = http.client.HTTPConnection(HOST, port, timeout=10)
        self.local = ClientResult()

    def request(self, endpoint: str, method: str, path: str, body: bytes | None = None, **headers):
        started = time.perf_counter()
        try:
            self.conn.request(method, path, body=body, headers={**self.headers, **headers})
            response = self.conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:
            self.local.errors[f"{endpoint}: {type(exc).__name__}"] += 1
            self.conn.close()
            self.conn = http.client.HTTPConnection(HOST, self.port, timeout=10)
            return None, b""
        self.local.latencies[endpoint].append((time.perf_counter() - started) * 1000)
        if response.will_close:
            self.local.server_closed += 1  # http.client reconnects on the next request by itself
        return response.status, data

    def bundle_cycle(self, size: int) -> bool:
        """Lease `size` tasks in one request and answer them in one: False when the queue ran dry."""
        status, data = self.request(NEXT_MANY, "GET", f"/api/v1/tasks/next?count={size}")
        if status != 200:
            if status is not None:
                self.local.errors[f"{NEXT_MANY}: HTTP {status}"] += 1
            return True
        leases = json.loads(data)["tasks"]
        if not leases:
            self.local.queue_empty += 1
            return False
        answers = [
            {"assignment": lease["id"], "idempotency_key": uuid.uuid4().hex, "answer": {"answer": i % 2 == 0}}
            for i, lease in enumerate(leases)
        ]
        status, data = self.request(
            SUBMIT_MANY,
            "POST",
            "/api/v1/assignments/submit",
            body=json.dumps({"answers": answers}).encode(),
            **{"Content-Type": "application/json"},
        )
        if status != 200:
            if status is not None:
                self.local.errors[f"{SUBMIT_MANY}: HTTP {status}"] += 1
            return True
        for result in json.loads(data)["results"]:
            if result["status"] == 200:
                self.local.cycles += 1
            else:
                self.local.errors[f"{SUBMIT_MANY}: item {result['code']}"] += 1
        return True

    def lease_one(self) -> tuple[bool, dict | None]:
        """GET /api/v1/tasks/next: (go on, the lease or None); go on is False when the queue ran dry."""
        status, data = self.request(NEXT, "GET", "/api/v1/tasks/next")
        if status == 204:
            self.local.queue_empty += 1
            return False, None
        if status != 200:
            if status is not None:
                self.local.errors[f"{NEXT}: HTTP {status}"] += 1
            return True, None
        return True, json.loads(data)

    def answer(self, lease: dict, chained: bool) -> dict | None:
        """Submit an answer to `lease` (asking for the next lease too when `chained`); the response's body when
        stored, else None (the error counted)."""
        endpoint = SUBMIT_NEXT if chained else SUBMIT
        status, data = self.request(
            endpoint,
            "POST",
            f"/api/v1/assignments/{lease['id']}/submit" + ("?next=true" if chained else ""),
            body=json.dumps({"answer": {"answer": self.local.cycles % 2 == 0}}).encode(),
            **{"Content-Type": "application/json", "Idempotency-Key": uuid.uuid4().hex},
        )
        if status != 201:
            if status is not None:
                self.local.errors[f"{endpoint}: HTTP {status}"] += 1
            return None
        self.local.cycles += 1
        return json.loads(data)

    def cycle(self, held: dict | None, chained: bool) -> tuple[bool, dict | None]:
        """One task cycle: lease (unless a chained submit handed `held` over), then answer. Returns (go on, the
        lease the answer handed over when chained); go on is False when the queue ran dry."""
        lease = held
        if lease is None:
            go_on, lease = self.lease_one()
            if lease is None:
                return go_on, None
        stored = self.answer(lease, chained)
        if not chained or stored is None:
            return True, None
        if stored["next"] is None:
            self.local.queue_empty += 1
            return False, None
        return True, stored["next"]

    def run(self, mode: str, start_at: float, stop_at: float, max_cycles: int, size: int = 1) -> None:
        time.sleep(max(0.0, start_at - time.time()))
        held: dict | None = None  # chained: the lease the last submit handed over
        while time.time() < stop_at and self.local.cycles < max_cycles:
            if mode == BUNDLE:
                if not self.bundle_cycle(size):
                    break  # the pool is sized so this does not happen; stop rather than spin
                continue
            if mode in REFERENCE_PATHS:
                status, _ = self.request(mode, "GET", REFERENCE_PATHS[mode])
                if status is not None and status != 200:
                    self.local.errors[f"{mode}: HTTP {status}"] += 1
                self.local.cycles += 1
                continue
            go_on, held = self.cycle(held, chained=mode == CHAIN)
            if not go_on:
                break  # the pool is sized so this does not happen; stop rather than spin
        self.conn.close()
        with self.lock:
            for endpoint, values in self.local.latencies.items():
                self.result.latencies[endpoint].extend(values)
            self.result.errors.update(self.local.errors)
            self.result.cycles += self.local.cycles
            self.result.queue_empty += self.local.queue_empty
            self.result.server_closed += self.local.server_closed


def generate_load(
    port: int, tokens: list[str], mode: str, start_at: float, duration: float, max_cycles: int, size: int = 1
) -> ClientResult:
    """One generator process: a thread per client, all starting at `start_at` (wall clock) and stopping
    after `duration` seconds or `max_cycles` cycles each, whichever comes first."""
    result = ClientResult()
    lock = threading.Lock()
    cpu_before = time.process_time()
    stop_at = start_at + duration
    clients = [_Client(port, token if mode != HEALTH else None, result, lock) for token in tokens]
    threads = [
        threading.Thread(target=c.run, args=(mode, start_at, stop_at, max_cycles, size), daemon=True)
        for c in clients
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.elapsed = time.time() - start_at
    result.cpu_seconds = time.process_time() - cpu_before
    return result


def _noop(_: int) -> int:
    return os.getpid()


# ---------------------------------------------------------------- measurement and report


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, int(-(-q * len(ordered) // 100)))  # ceil(q/100 * n)
    return ordered[rank - 1]


@dataclass
class LevelRun:
    clients: int
    mode: str
    result: ClientResult
    processes: int
    app_cpu: float | None = None  # CPU seconds gunicorn's tree spent during the run (None: not readable)
    db_cpu: float | None = None  # the same for PostgreSQL's postmaster and backends

    def cpu_ms_per_cycle(self) -> tuple[float | None, float | None]:
        """Application and database CPU milliseconds per cycle (a task, or a reference request)."""
        cycles = self.result.cycles

        def per(seconds: float | None) -> float | None:
            return 1000 * seconds / cycles if seconds is not None and cycles else None

        return per(self.app_cpu), per(self.db_cpu)

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.result.latencies.values())

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.result.elapsed if self.result.elapsed else 0.0

    @property
    def errors(self) -> int:
        return sum(self.result.errors.values())


def run_level(
    pool,
    processes: int,
    port: int,
    tokens: list[str],
    mode: str,
    duration: float,
    max_cycles: int,
    size: int = 1,
    servers: tuple[int | None, int | None] = (None, None),
):
    """Split the clients over the generator processes and merge what they measured, with the CPU that the
    server trees `servers` (gunicorn's master pid, PostgreSQL's postmaster pid) spent meanwhile."""
    procs = max(1, min(processes, len(tokens)))
    shares = [tokens[i::procs] for i in range(procs)]
    start_at = time.time() + 0.5  # all processes and threads start together
    cpu_before = [tree_cpu_seconds(pid) for pid in servers]
    futures = [
        pool.submit(generate_load, port, share, mode, start_at, duration, max_cycles, size)
        for share in shares
    ]
    merged = ClientResult()
    for future in futures:
        part = future.result(timeout=duration + 120)
        for endpoint, values in part.latencies.items():
            merged.latencies[endpoint].extend(values)
        merged.errors.update(part.errors)
        merged.cycles += part.cycles
        merged.queue_empty += part.queue_empty
        merged.server_closed += part.server_closed
        merged.elapsed = max(merged.elapsed, part.elapsed)
        merged.cpu_seconds += part.cpu_seconds
    cpu_after = [tree_cpu_seconds(pid) for pid in servers]
    app_cpu, db_cpu = (
        after - before if before is not None and after is not None else None
        for before, after in zip(cpu_before, cpu_after, strict=True)
    )
    return LevelRun(
        clients=len(tokens), mode=mode, result=merged, processes=procs, app_cpu=app_cpu, db_cpu=db_cpu
    )


# ---------------------------------------------------------------- setup: database, data, gunicorn


def database_recreate(admin_url: str, drop_only: bool = False, db_name: str | None = None) -> None:
    import psycopg

    name = db_name or DB_NAME
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not drop_only:
            conn.execute(f'CREATE DATABASE "{name}"')


def postmaster_of(admin_url: str) -> int | None:
    """The local PostgreSQL server's postmaster pid (None for a server this process cannot see)."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn, conn.cursor() as cursor:
        return postmaster_pid(cursor)


def data_create(n_workers: int, n_tasks: int) -> tuple[list[str], tuple[int, int]]:
    """Migrate, then create workers with tokens and `n_tasks` single-answer binary vote tasks.
    Returns the tokens and the queries per request of one cycle measured in-process."""
    import django
    from django.core.management import call_command

    django.setup()
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Dataset, Image
    from config.roles import WORKERS
    from consensus import binary_vote
    from crowd.services import token_for, user_create
    from hierarchy.models import Concept

    call_command("migrate", verbosity=0, interactive=False)
    tokens = [
        token_for(user_create(username=f"bench-worker-{i:03d}", password=None, roles=(WORKERS,)))
        for i in range(n_workers)
    ]
    dataset = Dataset.objects.create(name="queue-bench")
    concept = Concept.objects.create(wnid="n02084071", name="dog", gloss="a domesticated canid")
    images = Image.objects.bulk_create(
        (
            Image(
                dataset=dataset,
                file=f"bench/{i}.jpg",
                original_name=f"{i}.jpg",
                width=500,
                height=375,
                sha256=f"{i:064x}",
                phash="0" * 16,
            )
            for i in range(n_tasks)
        ),
        batch_size=5000,
    )
    # Queued as every caller queues plain votes: each a consensus question with its fixed-majority rule.
    binary_vote.vote_tasks_create(dataset=dataset, concept=concept, images=images, answers_wanted=1)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # fresh statistics, so the planner uses the queue's partial index

    # Queries per request of one cycle, measured in-process on the same database.
    client = Client(HTTP_AUTHORIZATION=f"Token {tokens[0]}")
    with CaptureQueriesContext(connection) as leased:
        response = client.get("/api/v1/tasks/next")
    assert response.status_code == 200, response.content  # setup check, not a timing assertion
    with CaptureQueriesContext(connection) as submitted:
        response = client.post(
            f"/api/v1/assignments/{response.json()['id']}/submit",
            {"answer": {"answer": True}},
            content_type="application/json",
            HTTP_IDEMPOTENCY_KEY="profile",
        )
    assert response.status_code == 201, response.content
    connection.close()
    control = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK")

    def statements(ctx) -> int:
        return sum(1 for q in ctx.captured_queries if not q["sql"].upper().startswith(control))

    return tokens, (statements(leased), statements(submitted))


# ---------------------------------------------------------------- main


def report(runs: list[LevelRun], queries: tuple[int, int], args, cpu_cores: int) -> None:
    print()
    print(
        f"gunicorn config.wsgi: {args.gunicorn_workers} {args.worker_class} workers on {HOST}; "
        f"PostgreSQL; {args.duration:g} s per level and mode; {cpu_cores} CPU cores shared with the generator"
    )
    print(
        f"SQL statements per request, BEGIN/COMMIT aside (in-process profile): next {queries[0]}, "
        f"submit {queries[1]}"
    )
    header = f"{'clients':>7}  {'endpoint':<8} {'requests':>8} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6}"
    print()
    print(header)
    print("-" * len(header))
    by_level: dict[int, dict[str, LevelRun]] = {}
    for run in runs:
        by_level.setdefault(run.clients, {})[run.mode] = run
    for clients, modes in by_level.items():
        for mode, run in modes.items():
            endpoints = (
                [mode]
                if mode in REFERENCE_PATHS
                else [NEXT_MANY, SUBMIT_MANY]
                if mode == BUNDLE
                else [NEXT, SUBMIT_NEXT]
                if mode == CHAIN
                else [NEXT, SUBMIT]
            )
            for endpoint in endpoints:
                values = run.result.latencies[endpoint]
                errors = sum(n for k, n in run.result.errors.items() if k.startswith(endpoint))
                print(
                    f"{clients:>7}  {endpoint:<8} {len(values):>8} {len(values) / run.result.elapsed:>8.1f} "
                    f"{percentile(values, 50):>8.2f} {percentile(values, 99):>8.2f} {errors:>6}"
                )
        health, cycle, me, bundle = modes.get(HEALTH), modes.get("cycle"), modes.get(ME), modes.get(BUNDLE)
        chain = modes.get(CHAIN)
        for name, run in (
            ("single-task cycles (next, then submit)", cycle),
            ("chained single-task cycles (submit?next=true)", chain),
            (f"bundle cycles (x{args.bundle})", bundle),
        ):
            if run is not None:
                print(
                    f"{clients:>7}  {name}: {run.result.cycles / run.result.elapsed:.1f} task cycles/s "
                    f"({run.requests_per_s:.1f} req/s)"
                    + (f"; trivial view {health.requests_per_s:.1f} req/s" if health else "")
                )
        if health and cycle:
            ratio = cycle.requests_per_s / health.requests_per_s if health.requests_per_s else float("nan")
            print(
                f"{clients:>7}  cycles: {cycle.result.cycles / cycle.result.elapsed:.1f}/s "
                f"({cycle.requests_per_s:.1f} req/s) = {ratio:.1%} of the trivial view's "
                f"{health.requests_per_s:.1f} req/s"
            )
        if health and me:
            print(
                f"{clients:>7}  reference: an authenticated request (GET /api/v1/me) runs at "
                f"{me.requests_per_s / health.requests_per_s:.1%} of the trivial view"
                + (f"; next+submit at {cycle.requests_per_s / me.requests_per_s:.1%} of it" if cycle else "")
            )
        for mode, run in modes.items():
            app_ms, db_ms = run.cpu_ms_per_cycle()
            if app_ms is not None:
                unit = "request" if mode in REFERENCE_PATHS else "task cycle"
                line = f"{clients:>7}  [{mode}] server CPU per {unit}: gunicorn {app_ms:.2f} ms"
                if db_ms is not None:
                    line += f", PostgreSQL {db_ms:.2f} ms"
                    if db_ms >= 0.05:  # a figure to divide by: the reference views barely touch the database
                        line += (
                            f"; at that cost {cpu_cores} cores carry at most "
                            f"{cpu_cores * 1000 / (app_ms + db_ms):.0f}/s (PostgreSQL's share alone: "
                            f"{cpu_cores * 1000 / db_ms:.0f}/s)"
                        )
                print(line)
        for mode, run in modes.items():
            cpu = run.result.cpu_seconds / run.result.elapsed / run.processes
            print(
                f"{clients:>7}  [{mode}] load: {run.processes} process(es) x ~{-(-clients // run.processes)} "
                f"thread(s), generator CPU {cpu:.0%} of a core per process"
                + (
                    f", server closed the connection {run.result.server_closed}x"
                    if run.result.server_closed
                    else ""
                )
                + (
                    f", queue ran dry for {run.result.queue_empty} client(s)"
                    if run.result.queue_empty
                    else ""
                )
            )
        print()

    errors = Counter()
    for run in runs:
        errors.update(run.result.errors)
    at = by_level.get(TARGET_LEVEL, {})
    print("targets:")
    if HEALTH in at and "cycle" in at:
        ratio = at["cycle"].requests_per_s / at[HEALTH].requests_per_s
        ok = ratio >= TARGET_RATIO
        print(
            f"  next+submit req/s >= {TARGET_RATIO:.0%} of trivial view at {TARGET_LEVEL} clients: "
            f"{ratio:.1%} -> {'holds' if ok else 'MISSED'}"
        )
        p99 = max(percentile(at["cycle"].result.latencies[e], 99) for e in (NEXT, SUBMIT))
        print(
            f"  p99 < {TARGET_P99_MS:g} ms at {TARGET_LEVEL} clients (worse endpoint): {p99:.2f} ms -> "
            f"{'holds' if p99 < TARGET_P99_MS else 'MISSED'}"
        )
    else:
        print(f"  (level {TARGET_LEVEL} not run: ratio and p99 targets not checked)")
    if CHAIN in at:
        run = at[CHAIN]
        rate = run.result.cycles / run.result.elapsed
        print(
            f"  the single-task path as the worker page runs it (submit?next=true): >= {TARGET_SINGLE_CYCLES:g} "
            f"task cycles/s at {TARGET_LEVEL} clients: {rate:.1f} -> "
            f"{'holds' if rate >= TARGET_SINGLE_CYCLES else 'MISSED'}"
        )
    if "cycle" in at:
        run = at["cycle"]
        rate = run.result.cycles / run.result.elapsed
        print(
            f"  the single-task path in two requests (next, then submit): >= {TARGET_SINGLE_CYCLES:g} task "
            f"cycles/s at {TARGET_LEVEL} clients: {rate:.1f} -> "
            f"{'holds' if rate >= TARGET_SINGLE_CYCLES else 'MISSED'}"
        )
    if args.bundle and BUNDLE in at:
        run = at[BUNDLE]
        rate = run.result.cycles / run.result.elapsed
        print(
            f"  bundles of {args.bundle}: >= {TARGET_BUNDLE_CYCLES:g} task cycles/s at {TARGET_LEVEL} clients: "
            f"{rate:.1f} -> {'holds' if rate >= TARGET_BUNDLE_CYCLES else 'MISSED'}"
        )
        p99 = max(percentile(run.result.latencies[e], 99) for e in (NEXT_MANY, SUBMIT_MANY))
        print(
            f"  bundles: p99 per request < {TARGET_BUNDLE_P99_MS:g} ms at {TARGET_LEVEL} clients (worse "
            f"endpoint): {p99:.2f} ms -> {'holds' if p99 < TARGET_BUNDLE_P99_MS else 'MISSED'}"
        )
    total = sum(errors.values())
    print(f"  zero errors: {total} -> {'holds' if total == 0 else 'MISSED'}")
    for reason, count in errors.most_common():
        print(f"    {count:>6}  {reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="~3 s per level instead of ~10 s")
    parser.add_argument("--duration", type=float, default=None, help="seconds per level and mode")
    parser.add_argument("--levels", default="1,8,32", help="concurrent clients per level")
    parser.add_argument(
        "--procs", type=int, default=2, help="load-generator processes (threads split over them)"
    )
    parser.add_argument("--gunicorn-workers", type=int, default=4)
    parser.add_argument(
        "--worker-class", default="sync", help="gunicorn worker class (sync closes connections)"
    )
    parser.add_argument("--tasks", type=int, default=None, help="tasks to queue (default from the duration)")
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("BENCH_POSTGRES_URL", f"postgres://postgres@{HOST}:5432/postgres"),
        help="PostgreSQL URL of a database to connect to when creating and dropping the bench database",
    )
    parser.add_argument("--keep-db", action="store_true", help="leave the bench database for inspection")
    parser.add_argument(
        "--bundle",
        type=int,
        default=0,
        help="also run bundle cycles: lease this many tasks per request and answer them in one (1 to 50)",
    )
    args = parser.parse_args()
    args.duration = args.duration or (3.0 if args.quick else 10.0)
    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    # Enough tasks that no level drains the queue even at a few thousand cycles/s; each level is also
    # capped at its share, so a very fast machine stops early instead of running dry.
    if args.bundle and not 1 <= args.bundle <= 50:
        parser.error("--bundle takes 1 to 50 tasks")
    modes = (HEALTH, ME, "cycle", CHAIN, BUNDLE) if args.bundle else (HEALTH, ME, "cycle", CHAIN)
    cycle_runs = len(levels) * (3 if args.bundle else 2)
    # Bundles answer several tasks per request: size the pool for a few thousand task cycles/s per run.
    n_tasks = args.tasks or int((2_000 if not args.bundle else 4_000) * args.duration * (cycle_runs + 1) // 2)
    per_client_cap = {c: max(1, n_tasks // (cycle_runs + 1) // c) for c in levels}

    var_dir = tempfile.mkdtemp(prefix="crowdlabel-bench-")
    base_url = args.admin_url.rsplit("/", 1)[0]
    env = server_env(f"{base_url}/{DB_NAME}", var_dir)
    os.environ.update(env)

    print(f"setting up database {DB_NAME}: migrate, {max(levels)} workers, {n_tasks} tasks ...", flush=True)
    database_recreate(args.admin_url)
    gunicorn = None
    runs: list[LevelRun] = []
    try:
        started = time.time()
        tokens, queries = data_create(max(levels), n_tasks)
        print(f"  done in {time.time() - started:.1f} s", flush=True)
        port = free_port()
        with open(os.path.join(var_dir, "gunicorn.log"), "w") as log:
            gunicorn = gunicorn_start(port, env, args.gunicorn_workers, args.worker_class, log)
            spawn = multiprocessing.get_context("spawn")  # children load no Django and share no sockets
            with ProcessPoolExecutor(max_workers=args.procs, mp_context=spawn) as pool:
                list(pool.map(_noop, range(args.procs)))
                # Warm-up (not reported): every gunicorn worker imports the URL map and opens its connection.
                warm = tokens[: min(8, len(tokens))]
                run_level(pool, args.procs, port, warm, HEALTH, 1.0, 10_000)
                run_level(
                    pool, args.procs, port, warm, "cycle", 1.0, max(1, n_tasks // (len(levels) + 1) // 8)
                )
                if args.bundle:
                    run_level(pool, args.procs, port, warm, BUNDLE, 1.0, 10, args.bundle)
                servers = (gunicorn.pid, postmaster_of(args.admin_url))
                for clients in levels:
                    for mode in modes:
                        run = run_level(
                            pool,
                            args.procs,
                            port,
                            tokens[:clients],
                            mode,
                            args.duration,
                            per_client_cap[clients] if mode in CYCLE_MODES else 10**9,
                            args.bundle,
                            servers,
                        )
                        runs.append(run)
                        print(
                            f"  {clients:>2} clients {mode:<7}: {run.requests_per_s:8.1f} req/s", flush=True
                        )
            gunicorn_stop(gunicorn)
            gunicorn = None
    finally:
        if gunicorn is not None:
            gunicorn_stop(gunicorn)
        from django.db import connections

        connections.close_all()
        if not args.keep_db:
            database_recreate(args.admin_url, drop_only=True)
    report(runs, queries, args, os.cpu_count() or 1)


if __name__ == "__main__":
    main()
