"""Soak under faults: the whole platform (gunicorn with 4 workers, a Celery worker and beat, each its own process,
on PostgreSQL and a Redis broker this script starts on a free loopback port) worked by the simulator's hostile
crowd through the HTTP API (`manage.py simulate --server`), several runs at once on datasets of their own, so
verification, Algorithm 1, boxes and review run together; while PostgreSQL backends and a gunicorn worker are
killed every few seconds, the broker is stopped for 30 s once and an export is requested every minute.

Then the faults stop, the crowd's runs finish, the scheduled sweeps run once more by hand, and it prints: answers
(submits) by status, 5xx responses (with the gunicorn error log's tracebacks), 'deadlock detected' in the
PostgreSQL server log for this database, SQL invariants (every answer counted once), questions, box jobs and
review items left open, whether each dataset's last export equals its final labels (FinalLabel and FinalBox
rows), and task cycles/s beside a short `bench/load.py` run in the same invocation. It asserts nothing
(tests/faults/test_soak.py runs it and asserts).

Usage: python bench/soak.py [--quick] [--duration S] [--clients N] [--json FILE]
Full mode runs 10 minutes of crowd; --quick 60 s. Needs PostgreSQL (BENCH_POSTGRES_URL, as load.py) and
redis-server on the PATH (never the machine's own Redis: the bench starts its own on another port).
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # simulator.export_score (pure) reads exports
import load  # noqa: E402  (backend and gunicorn-worker kills, the integrity check)
import queue_throughput as qt  # noqa: E402  (database, free port and gunicorn set-up)

HOST = qt.HOST
REPO_ROOT = qt.REPO_ROOT
DB_NAME = "crowdlabel_soak"
APP_NAME = "crowdlabel-soak"  # every platform process connects as this, so its backends are the ones killed
ORGANIZER = "soak-organizer@example.org"
# The crowd's runs, cycled over the slots: `full` works verification, Algorithm 1, boxes and review in turn;
# beside it, plain verification and box runs keep those pipelines busy while a full run is in another phase.
SCENARIOS = ("full", "verify", "full", "boxes")
BROKER_DOWN_SECONDS = 30.0
EXPORT_EVERY = 60.0
QUEUES = "default,consensus,exports,mturk"
# The schedule, shortened so a run of minutes sees every scheduled task several times (leases a killed request
# held expire, starved questions are settled, scans run).
SCHEDULE_ENV = {
    "CROWDLABEL_LEASE_SECONDS": "60",
    "CROWDLABEL_LEASE_EXPIRY_EVERY_SECONDS": "10",
    "CROWDLABEL_STARVED_AFTER_SECONDS": "20",
    "CROWDLABEL_REVIEW_SCAN_EVERY_SECONDS": "10",
    "CROWDLABEL_REVIEW_SCAN_DEBOUNCE_SECONDS": "5",
    "CROWDLABEL_OUTBOX_RELAY_SECONDS": "5",
}
ACCESS_FORMAT = "%(s)s %(m)s %(U)s %(M)s"  # status, method, path, milliseconds
SUBMIT_PATH = re.compile(r"^/api/v1/(assignments/\d+/submit|review/)")
ANSWER_PATH = re.compile(r"^/api/v1/assignments/\d+/submit")


@dataclass
class Soak:
    duration: float
    clients: int
    started: float = 0.0
    load_stopped: float = 0.0
    backends_killed: int = 0
    workers_killed: int = 0
    celery_restarts: dict = field(default_factory=dict)  # Celery processes that exited and were started again
    broker_down: tuple[float, float] | None = None
    exports_requested: Counter = field(default_factory=Counter)
    runs: list[dict] = field(default_factory=list)
    statuses: dict = field(default_factory=dict)
    server_errors: list[str] = field(default_factory=list)
    tracebacks: list[str] = field(default_factory=list)
    deadlocks: dict = field(default_factory=dict)
    integrity: dict = field(default_factory=dict)
    sweep: dict = field(default_factory=dict)
    leftovers: dict = field(default_factory=dict)
    exports: dict = field(default_factory=dict)
    cycles: int = 0
    load_bench: dict = field(default_factory=dict)


# ---------------------------------------------------------------- the platform's processes


class Platform:
    """gunicorn, a Celery worker, beat and a private redis-server, started and stopped together."""

    def __init__(self, var_dir: Path, database_url: str, gunicorn_workers: int) -> None:
        self.var = var_dir
        self.redis_port = qt.free_port()
        self.port = qt.free_port()
        self.gunicorn_workers = gunicorn_workers
        self.env = qt.server_env(
            database_url,
            str(var_dir),
            DB_CONN_MAX_AGE="600",
            PGAPPNAME=APP_NAME,
            CELERY_BROKER_URL=f"redis://{HOST}:{self.redis_port}/0",
            **SCHEDULE_ENV,
        )
        self.env.pop("CELERY_BROKER_KEY_PREFIX", None)
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, io.TextIOBase] = {}
        # Celery processes that exited on their own and were started again, as a process supervisor (systemd's
        # Restart=always, a container's restart policy) does in a deployment (docs/deployment.md).
        self.restarts: Counter = Counter()
        self._supervising = threading.Event()

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def log(self, name: str):
        if name not in self.logs:
            self.logs[name] = open(self.var / f"{name}.log", "a")  # noqa: SIM115 (closed in stop_all)
        return self.logs[name]

    def manage(self, *args: str, env: dict | None = None, timeout: float = 600) -> str:
        run = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO_ROOT,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if run.returncode:
            raise RuntimeError(f"manage.py {args[0]} failed:\n{run.stderr[-3000:]}")
        return run.stdout

    def redis_start(self) -> None:
        self.procs["redis"] = subprocess.Popen(
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(self.redis_port),
                "--bind",
                HOST,
                "--dir",
                str(self.var),
                "--appendonly",
                "yes",  # a stopped broker keeps its queued messages, as a restarted one on disk does
                "--save",
                "",
            ],
            stdout=self.log("redis"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + 20
        while time.time() < deadline:
            ping = subprocess.run(
                ["redis-cli", "-h", HOST, "-p", str(self.redis_port), "ping"], capture_output=True, text=True
            )
            if ping.stdout.strip() == "PONG":
                return
            time.sleep(0.1)
        raise RuntimeError("redis-server did not answer within 20 s")

    def redis_stop(self) -> None:
        proc = self.procs.pop("redis", None)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)

    def celery_start(self, name: str) -> None:
        celery = [sys.executable, "-m", "celery", "-A", "config"]
        args = {
            "worker": ["worker", "-Q", QUEUES, "--concurrency", "2", "--loglevel", "WARNING"],
            "beat": ["beat", "--loglevel", "WARNING", "--schedule", str(self.var / "beat-schedule")],
        }[name]
        self.procs[name] = subprocess.Popen(
            [*celery, *args],
            cwd=REPO_ROOT,
            env=self.env,
            stdout=self.log(f"celery-{name}"),
            stderr=subprocess.STDOUT,
        )

    def supervise(self) -> None:
        """Start again a Celery worker or beat that exited while it should run (one that `stop` stopped is
        no longer in `procs`), every second, until `stop_all`."""
        while not self._supervising.wait(1.0):
            for name in ("worker", "beat"):
                proc = self.procs.get(name)
                if proc is not None and proc.poll() is not None and not self._supervising.is_set():
                    self.restarts[name] += 1
                    self.celery_start(name)

    def start(self) -> None:
        self.redis_start()
        self.celery_start("worker")
        self.celery_start("beat")
        threading.Thread(target=self.supervise, daemon=True).start()
        self.procs["gunicorn"] = qt.gunicorn_start(
            self.port,
            self.env,
            self.gunicorn_workers,
            "sync",
            self.log("gunicorn"),
            extra_args=(
                "--access-logfile",
                str(self.var / "access.log"),
                "--access-logformat",
                ACCESS_FORMAT,
            ),
        )

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        if name == "gunicorn":
            qt.gunicorn_stop(proc)
            return
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def stop_all(self) -> None:
        self._supervising.set()
        for name in ("gunicorn", "beat", "worker", "redis"):
            self.stop(name)
        for log in self.logs.values():
            log.close()


# ---------------------------------------------------------------- the PostgreSQL server log


def pg_log_path(admin_url: str, given: str | None) -> Path | None:
    """The server log: `--pg-log`, the logging collector's current file, or Debian's stderr log."""
    if given:
        return Path(given)
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        current = conn.execute("SELECT pg_current_logfile()").fetchone()[0]
        data_dir = conn.execute("SHOW data_directory").fetchone()[0]
        major = conn.execute("SHOW server_version_num").fetchone()[0][:2]
    if current:
        path = Path(current)
        return path if path.is_absolute() else Path(data_dir) / path
    debian = Path(f"/var/log/postgresql/postgresql-{major}-main.log")
    return debian if debian.exists() else None


def pg_log_size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path else 0
    except OSError:
        return 0


def deadlocks_count(path: Path | None, start: int, db_name: str) -> dict:
    """'deadlock detected' lines of this database written to the server log since `start` (bytes), with the
    DETAIL and CONTEXT lines that follow each (what was waited for, and where)."""
    if path is None:
        return {"log": None, "count": None}
    try:
        with open(path, "rb") as f:
            f.seek(start)
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError as exc:
        return {"log": str(path), "count": None, "error": str(exc)}
    found: list[list[str]] = []
    mark = f"@{db_name} "
    for i, line in enumerate(lines):
        if "deadlock detected" in line and mark in line:
            found.append(
                [line]
                + list(
                    itertools.takewhile(
                        lambda x: not re.match(r"^\d{4}-\d\d-\d\d ", x) or "DETAIL" in x or "CONTEXT" in x,
                        lines[i + 1 : i + 12],
                    )
                )
            )
    return {"log": str(path), "count": len(found), "first": ["\n".join(f) for f in found[:3]]}


# ---------------------------------------------------------------- the crowd and the faults


def crowd_command(platform: Platform, scenario: str, seed: int, concurrency: int, images: int):
    """One `simulate --server` run on a dataset of its own (named `sim-SCENARIO-SEED-...`). Its accounts and
    concepts are created in the database directly and its operator steps (overlap scan, the stuck sweep when
    the crowd runs dry, splits) run in its process, as an operator's shell would run them: the crowd itself
    works only through the HTTP API."""
    args = [
        sys.executable,
        "manage.py",
        "simulate",
        "--server",
        platform.url,
        "--scenario",
        scenario,
        "--crowd",
        "hostile",
        "--images",
        str(images),
        "--image-size",
        "160x120",
        "--workers",
        str(max(12, 2 * concurrency)),
        "--concurrency",
        str(concurrency),
        "--seed",
        str(seed),
        "--no-progress",
    ]
    if scenario == "full":
        args += ["--gold-rate", "0"]
    return args


def crowd_run(platform: Platform, args: list[str], stop_at: float) -> dict:
    """Run the simulator; past `stop_at` it is stopped (the run is counted as cut short). Its summary, or why
    it failed."""
    scenario, seed = args[args.index("--scenario") + 1], int(args[args.index("--seed") + 1])
    started = time.time()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        # The operator's shell is not the platform: its connections are not among those killed.
        env = {**platform.env, "PGAPPNAME": "soak-crowd"}
        proc = subprocess.Popen(args, cwd=REPO_ROOT, env=env, stdout=out, stderr=err, text=True)
        while proc.poll() is None and time.time() < stop_at:
            time.sleep(0.5)
        cut = proc.poll() is None
        if cut:
            proc.terminate()
            proc.wait()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    row = {
        "scenario": scenario,
        "seed": seed,
        "seconds": round(time.time() - started, 1),
        "rc": 0 if cut else proc.returncode,
        "cut": cut,
    }
    if cut:
        return row
    try:
        summary = json.loads(stdout)
        row |= {
            k: summary.get(k)
            for k in ("tasks_answered", "submit_errors", "submit_retries", "tasks_by_kind", "box_jobs")
        }
    except ValueError:
        row["stderr"] = stderr[-2000:]
    return row


def organizer_call(platform: Platform, token: str, method: str, path: str, body: dict | None = None):
    import http.client

    conn = http.client.HTTPConnection(HOST, platform.port, timeout=60)
    try:
        head = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=head)
        response = conn.getresponse()
        data = response.read()
        return response.status, data
    except (OSError, http.client.HTTPException):
        return 0, b""
    finally:
        conn.close()


def soak_datasets(database_url: str) -> list[tuple[int, str]]:
    """The crowd's datasets, with the soak's organizer made an organizer of each (to request exports)."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO annotation_dataset_organizers (dataset_id, user_id) SELECT d.id, u.id FROM "
            "annotation_dataset d, auth_user u WHERE u.username = %s AND d.name LIKE 'sim-%%' AND NOT EXISTS "
            "(SELECT 1 FROM annotation_dataset_organizers o WHERE o.dataset_id = d.id AND o.user_id = u.id)",
            (ORGANIZER,),
        )
        return conn.execute(
            "SELECT id, name FROM annotation_dataset WHERE name LIKE 'sim-%%' AND name NOT LIKE '%%-accounts' "
            "ORDER BY id"
        ).fetchall()


def crowd_and_faults(
    platform: Platform,
    token: str,
    result: Soak,
    admin_url: str,
    db_name: str,
    kill_every: float,
    images: int,
    drain: float,
) -> None:
    slots = max(4, result.clients // 8)
    per_slot = max(1, result.clients // slots)
    deadline = result.started + result.duration
    seeds = itertools.count(1)
    lock = threading.Lock()

    def slot(index: int) -> None:
        for n in itertools.count():
            if time.time() > deadline:
                return
            scenario = SCENARIOS[(index + n) % len(SCENARIOS)]
            args = crowd_command(platform, scenario, next(seeds), per_slot, images)
            row = crowd_run(platform, args, deadline + drain)
            with lock:
                result.runs.append(row)

    threads = [threading.Thread(target=slot, args=(i,), daemon=True) for i in range(slots)]
    for thread in threads:
        thread.start()
    database_url = platform.env["DATABASE_URL"]
    broker_at = result.started + min(result.duration * 0.3, max(0.0, result.duration - BROKER_DOWN_SECONDS))
    next_kill, next_export, kills = result.started + kill_every, result.started + EXPORT_EVERY / 2, 0
    exports = itertools.count()
    while time.time() < deadline:
        now = time.time()
        if now >= next_kill:
            next_kill = now + kill_every
            kills += 1
            result.backends_killed += load.backends_kill(admin_url, db_name=db_name, app_name=APP_NAME)
            if kills % 2 == 0:  # a gunicorn worker every other time: the master starts a new one
                result.workers_killed += load.gunicorn_worker_kill(platform.procs["gunicorn"].pid)
        if result.broker_down is None and now >= broker_at:
            platform.redis_stop()
            result.broker_down = (now, 0.0)
        elif (
            result.broker_down
            and not result.broker_down[1]
            and now >= result.broker_down[0] + BROKER_DOWN_SECONDS
        ):
            platform.redis_start()
            result.broker_down = (result.broker_down[0], time.time())
        if now >= next_export:
            next_export = now + EXPORT_EVERY
            datasets = soak_datasets(database_url)
            if datasets:
                dataset_id = datasets[next(exports) % len(datasets)][0]
                status, _ = organizer_call(
                    platform,
                    token,
                    "POST",
                    f"/api/v1/datasets/{dataset_id}/exports/",
                    {"format": "coco", "include_images": False},
                )
                result.exports_requested[status] += 1
        time.sleep(0.2)
    if result.broker_down and not result.broker_down[1]:
        platform.redis_start()
        result.broker_down = (result.broker_down[0], time.time())
    for thread in threads:  # the runs under way finish, without faults
        thread.join()
    result.load_stopped = time.time()


# ---------------------------------------------------------------- after the crowd


SWEEP = """
import json
from annotation import queue
from annotation.models import Dataset
from outbox import services as outbox
from review import scan, stuck
out = {"leases_expired": queue.leases_expire(), "relay": outbox.relay(), "scanned": 0}
for dataset in Dataset.objects.filter(name__startswith="sim-"):
    scan.overlaps_scan(dataset)
    out["scanned"] += 1
report = stuck.stuck_enqueue(starved_after=0)
out["starved_settled"] = report.starved_settled
out["queued_for_review"] = report.questions_queued + report.box_jobs_queued
print(json.dumps(out, default=str))
"""


def final_sweep(platform: Platform) -> dict:
    """What the schedule runs, once more, at once: lease expiry, the outbox relay, an overlap scan of every
    dataset and the stuck-question sweep with no wait."""
    out = platform.manage("shell", "-c", SWEEP, env={"PGAPPNAME": "soak-sweep"})
    return json.loads(out.strip().splitlines()[-1])


LEFTOVERS = {
    "questions_open": "SELECT dataset_id, count(*) FROM consensus_question WHERE state = 'open' GROUP BY 1",
    "questions_in_review": "SELECT dataset_id, count(*) FROM consensus_question WHERE state = 'review' GROUP BY 1",
    "box_jobs_open": "SELECT dataset_id, count(*) FROM annotation_boxjob WHERE status NOT IN ('done', 'review') "
    "GROUP BY 1",
    "box_jobs_in_review": "SELECT dataset_id, count(*) FROM annotation_boxjob WHERE status = 'review' GROUP BY 1",
    "review_items_open": "SELECT dataset_id, count(*) FROM review_reviewitem WHERE state = 'open' GROUP BY 1",
    "leases_open": "SELECT t.dataset_id, count(*) FROM annotation_assignment a JOIN annotation_task t ON "
    "t.id = a.task_id WHERE a.state = 'leased' GROUP BY 1",
}


def leftovers(database_url: str, cut_seeds: set[int]) -> dict:
    """What is left open after the sweep, in the datasets of finished runs and (apart) of runs that failed or
    were cut short (their crowd stopped before the work was done)."""
    import psycopg

    names = dict(soak_datasets(database_url))
    cut = {i for i, name in names.items() if int(name.split("-")[2]) in cut_seeds}
    out: dict = {"finished_runs": dict.fromkeys(LEFTOVERS, 0), "unfinished_runs": dict.fromkeys(LEFTOVERS, 0)}
    with psycopg.connect(database_url, autocommit=True) as conn:
        for what, sql in LEFTOVERS.items():
            for dataset_id, n in conn.execute(sql).fetchall():
                out["unfinished_runs" if dataset_id in cut else "finished_runs"][what] += n
    return out


def invariants(database_url: str) -> dict:
    """load.py's checks (every submitted answer counted once on its task, no task with two open leases, no
    submitted assignment without its answer), with its "past what it wanted" made to allow a replacement answer
    for each voided vote (a blocked spammer's answer no longer counts, so the question asks once more); and the
    consensus counts: each question's yes and no counts are its votes that count (not withdrawn, not voided)."""
    import psycopg

    found = load.integrity_check(database_url)
    with psycopg.connect(database_url, autocommit=True) as conn:
        one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        found["over_counted_tasks"] = one(
            "SELECT count(*) FROM annotation_task t WHERE answers_count <> (SELECT count(*) FROM "
            "annotation_assignment a WHERE a.task_id = t.id AND a.state = 'submitted')"
        )
        found["tasks_past_wanted"] = one(
            "SELECT count(*) FROM annotation_task t LEFT JOIN consensus_question q ON q.task_id = t.id WHERE "
            "t.answers_count > t.answers_wanted + (SELECT count(*) FROM consensus_vote v JOIN "
            "consensus_votevoid x ON x.vote_id = v.id WHERE v.question_id = q.id)"
        )
        found["questions_miscounted"] = one(
            "SELECT count(*) FROM consensus_question q WHERE (q.yes_count, q.no_count) <> (SELECT "
            "count(*) FILTER (WHERE v.answer), count(*) FILTER (WHERE NOT v.answer) FROM consensus_vote v "
            "WHERE v.question_id = q.id AND NOT v.withdrawn AND NOT EXISTS (SELECT 1 FROM consensus_votevoid x "
            "WHERE x.vote_id = v.id))"
        )
        found["votes_without_submitted_answer"] = one(
            "SELECT count(*) FROM consensus_vote v JOIN annotation_assignment a ON a.id = v.assignment_id "
            "WHERE a.state <> 'submitted'"
        )
    return found


def export_fetch(platform: Platform, token: str, dataset_id: int, fmt: str, wait: float = 300) -> bytes | str:
    status, data = organizer_call(
        platform,
        token,
        "POST",
        f"/api/v1/datasets/{dataset_id}/exports/",
        {"format": fmt, "include_images": False},
    )
    if status not in (200, 201, 202):
        return f"request answered {status}: {data[:200]!r}"
    job = json.loads(data)
    deadline = time.time() + wait
    while time.time() < deadline:
        status, data = organizer_call(platform, token, "GET", f"/api/v1/exports/{job['id']}")
        state = json.loads(data)["state"] if status == 200 else None
        if state == "done":
            status, data = organizer_call(platform, token, "GET", f"/api/v1/exports/{job['id']}/file")
            return data if status == 200 else f"download answered {status}"
        if state == "failed":
            return f"export failed: {json.loads(data).get('error', '')[:300]}"
        time.sleep(1.0)
    return "export not done in time"


def final_rows(database_url: str, dataset_id: int) -> tuple[set, set, set]:
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        boxes = {
            (image, wnid, tuple(round(v, 3) for v in (x1, y1, x2, y2)))
            for image, wnid, x1, y1, x2, y2 in conn.execute(
                "SELECT b.image_id, c.wnid, b.x1, b.y1, b.x2, b.y2 FROM annotation_finalbox b JOIN "
                "hierarchy_concept c ON c.id = b.concept_id WHERE b.dataset_id = %s AND NOT EXISTS (SELECT 1 "
                "FROM benchmark_blacklistentry e WHERE e.image_id = b.image_id AND e.lifted_at IS NULL AND "
                "(e.concept_id IS NULL OR e.concept_id = b.concept_id))",
                (dataset_id,),
            )
        }
        labels = conn.execute(
            "SELECT l.image_id, c.wnid, l.present FROM annotation_finallabel l JOIN hierarchy_concept c ON "
            "c.id = l.concept_id WHERE l.dataset_id = %s",
            (dataset_id,),
        ).fetchall()
    return boxes, {(i, w) for i, w, p in labels if p}, {(i, w) for i, w, p in labels if not p}


def left_out(archive: bytes) -> dict[int, list[str]]:
    """The images the export's manifest says it left out (labelling unfinished, boxes not final), with the
    reasons."""
    import zipfile

    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    images = manifest.get("completeness", {}).get("images_left_out", {}).get("images", [])
    return {int(i["image_id"]): list(i["reasons"]) for i in images}


def exports_compare(platform: Platform, token: str, database_url: str) -> dict:
    """Each dataset's export (COCO for boxes, ILSVRC for image-level labels) against its FinalBox and
    FinalLabel rows. An export leaves out an image whose labelling is unfinished (a question or box job in
    review for want of a reviewer, say) and names it with its reasons in its manifest (docs: what leaves
    equals what is inside): `equal` counts the datasets whose export holds exactly their final rows;
    `equal_but_left_out` those whose export holds exactly the final rows of the images it writes and names
    every other image with a reason; the images left out are counted by reason."""
    from simulator.export_score import read_coco, read_ilsvrc

    out: dict = {
        "datasets": 0,
        "equal": 0,
        "equal_but_left_out": 0,
        "left_out_images": 0,
        "left_out_reasons": Counter(),
        "differences": [],
    }
    for dataset_id, name in soak_datasets(database_url):
        out["datasets"] += 1
        coco, ilsvrc = (export_fetch(platform, token, dataset_id, f) for f in ("coco", "ilsvrc"))
        if isinstance(coco, str) or isinstance(ilsvrc, str):
            out["differences"].append({"dataset": name, "error": coco if isinstance(coco, str) else ilsvrc})
            continue
        boxes, positives, negatives = final_rows(database_url, dataset_id)
        skipped = left_out(coco) | left_out(ilsvrc)
        out["left_out_images"] += len(skipped)
        out["left_out_reasons"].update(r for reasons in skipped.values() for r in reasons)
        written = (
            {b for b in boxes if b[0] not in skipped},
            {p for p in positives if p[0] not in skipped},
            {n for n in negatives if n[0] not in skipped},
        )
        exported = read_coco(coco)
        exported_boxes = {
            (image, wnid, tuple(round(v, 3) for v in b))
            for (image, wnid), bs in exported.boxes.items()
            for b in bs
        }
        labels = read_ilsvrc(ilsvrc)
        diff = {
            "boxes_only_exported": len(exported_boxes - boxes),
            "boxes_only_final": len(boxes - exported_boxes),
            "positives_only_exported": len(labels.positives - positives),
            "positives_only_final": len(positives - labels.positives),
            "negatives_only_exported": len(labels.negatives - negatives),
            "negatives_only_final": len(negatives - labels.negatives),
        }
        on_written = {
            "boxes": exported_boxes == written[0],
            "positives": labels.positives == written[1],
            "negatives": labels.negatives == written[2],
        }
        if not any(diff.values()):
            out["equal"] += 1
        elif all(on_written.values()):
            out["equal_but_left_out"] += 1
        else:
            out["differences"].append({"dataset": name, **diff, "left_out": len(skipped)})
    out["left_out_reasons"] = dict(out["left_out_reasons"])
    return out


def access_log(path: Path, since: float) -> tuple[dict, list[str], int]:
    """Answers (submits and review decisions) by status, 5xx responses and successful task submits."""
    statuses: Counter = Counter()
    errors: list[str] = []
    cycles = 0
    if not path.exists():
        return {}, errors, 0
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        status, method, route = parts[0], parts[1], parts[2]
        if status.startswith("5"):
            errors.append(line)
        if method == "POST" and SUBMIT_PATH.match(route):
            statuses[status] += 1
        if method == "POST" and ANSWER_PATH.match(route) and status in ("200", "201"):
            cycles += 1
    return dict(sorted(statuses.items())), errors, cycles


def tracebacks(path: Path) -> list[str]:
    """The tracebacks in gunicorn's error log (Django logs each 500 with one)."""
    text = path.read_text() if path.exists() else ""
    found = re.findall(r"(?ms)^(?:Internal Server Error|ERROR).*?^Traceback.*?(?=^\S|\Z)(?:^\S.*$)?", text)
    return found


def load_bench(admin_url: str, duration: float, clients: int, db_name: str, var: Path) -> dict:
    """bench/load.py in the same invocation, for its cycles/s beside the soak's."""
    out = var / "load.json"
    run = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "load.py"),
            "--duration",
            str(duration),
            "--clients",
            str(clients),
            "--kill-gunicorn-worker",
            "--db-name",
            db_name,
            "--admin-url",
            admin_url,
            "--json",
            str(out),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    if run.returncode or not out.exists():
        return {"error": run.stderr[-2000:]}
    summary = json.loads(out.read_text())
    return {"cycles": summary["cycles"], "seconds": duration, "cycles_per_s": summary["cycles"] / duration}


# ---------------------------------------------------------------- main


def run(
    *,
    duration: float,
    clients: int,
    admin_url: str,
    db_name: str = DB_NAME,
    kill_every: float = 3.0,
    images: int = 8,
    drain: float = 300.0,
    load_seconds: float = 20.0,
    pg_log: str | None = None,
    keep: bool = False,
) -> Soak:
    result = Soak(duration=duration, clients=clients)
    var = Path(tempfile.mkdtemp(prefix="crowdlabel-soak-"))
    database_url = admin_url.rsplit("/", 1)[0] + f"/{db_name}"
    platform = Platform(var, database_url, gunicorn_workers=4)
    qt.database_recreate(admin_url, db_name=db_name)
    log_path = pg_log_path(admin_url, pg_log)
    try:
        platform.manage("migrate", "--noinput", env={"PGAPPNAME": "soak-setup"})
        token = re.search(r"API token: (\S+)", platform.manage("create_organizer", ORGANIZER)).group(1)
        # Loaded once: the full runs would each load it, and two loads at once race (see the report).
        platform.manage("load_hierarchy", "fixtures/hierarchies/voc20.json", env={"PGAPPNAME": "soak-setup"})
        platform.start()
        log_start = pg_log_size(log_path)
        result.started = time.time()
        crowd_and_faults(platform, token, result, admin_url, db_name, kill_every, images, drain)
        platform.stop("beat")  # the end state stays put while it is measured
        time.sleep(2.0)
        result.sweep = final_sweep(platform)
        cut = {r["seed"] for r in result.runs if r.get("cut")}
        result.leftovers = leftovers(database_url, cut)
        result.exports = exports_compare(platform, token, database_url)
        result.integrity = invariants(database_url)
        platform.stop_all()
        result.celery_restarts = dict(platform.restarts)
        result.deadlocks = deadlocks_count(log_path, log_start, db_name)
        result.statuses, result.server_errors, result.cycles = access_log(var / "access.log", result.started)
        result.tracebacks = tracebacks(var / "gunicorn.log")
    finally:
        platform.stop_all()
        if not keep:
            qt.database_recreate(admin_url, drop_only=True, db_name=db_name)
    if load_seconds > 0:
        result.load_bench = load_bench(admin_url, load_seconds, min(clients, 16), f"{db_name}_load", var)
    if not keep:
        shutil.rmtree(var, ignore_errors=True)
    else:
        print(f"logs and files kept in {var}")
    return result


def summary(result: Soak) -> dict:
    seconds = result.load_stopped - result.started
    return {
        "duration": result.duration,
        "seconds_with_crowd": round(seconds, 1),
        "clients": result.clients,
        "backends_killed": result.backends_killed,
        "workers_killed": result.workers_killed,
        "celery_restarts": dict(result.celery_restarts),
        "broker_down_seconds": round(result.broker_down[1] - result.broker_down[0], 1)
        if result.broker_down
        else 0,
        "exports_requested": {str(k): v for k, v in result.exports_requested.items()},
        "runs": result.runs,
        "answers_by_status": result.statuses,
        "responses_5xx": len(result.server_errors),
        "responses_5xx_by_status": dict(Counter(line.split()[0] for line in result.server_errors)),
        "answers_5xx": sum(1 for line in result.server_errors if SUBMIT_PATH.match(line.split()[2])),
        "task_submits_5xx": sum(1 for line in result.server_errors if ANSWER_PATH.match(line.split()[2])),
        "deadlocks": result.deadlocks.get("count"),
        "deadlocks_first": result.deadlocks.get("first", []),
        "integrity": result.integrity,
        "sweep": result.sweep,
        "leftovers": result.leftovers,
        "exports": result.exports,
        "cycles": result.cycles,
        "cycles_per_s": round(result.cycles / seconds, 2) if seconds > 0 else None,
        "load_bench": result.load_bench,
    }


def report(result: Soak) -> None:
    s = summary(result)
    print(
        f"\nsoak: {s['clients']} simulated clients (hostile crowd), {s['seconds_with_crowd']:.0f} s with the crowd "
        f"({s['duration']:.0f} s of faults), {os.cpu_count()} CPU cores"
    )
    print(
        f"  faults: {s['backends_killed']} PostgreSQL backends and {s['workers_killed']} gunicorn workers killed, "
        f"broker down {s['broker_down_seconds']} s; exports requested {s['exports_requested']}; Celery "
        f"processes that exited and were started again (a supervisor's job): {s['celery_restarts'] or 'none'}"
    )
    by_scenario = Counter(r["scenario"] for r in s["runs"])
    failed = [r for r in s["runs"] if r["rc"]]
    cut = sum(1 for r in s["runs"] if r.get("cut"))
    print(f"  simulator runs: {dict(by_scenario)}, failed {len(failed)}, cut short after the drain {cut}")
    for row in failed[:3]:
        print("    " + " / ".join(row.get("stderr", "").strip().splitlines()[-3:]))
    print(f"  answers (submits, review decisions) by status: {s['answers_by_status']}")
    print(
        f"  responses 5xx: {s['responses_5xx']} {s['responses_5xx_by_status']}, of them answers "
        f"{s['answers_5xx']} (task submits {s['task_submits_5xx']}, the rest review decisions)"
    )
    for line in result.server_errors[:10]:
        print(f"    {line}")
    for trace in result.tracebacks[:3]:
        print("    " + trace.strip().replace("\n", "\n    ")[-3000:])
    print(f"  deadlocks in the PostgreSQL log ({result.deadlocks.get('log')}): {s['deadlocks']}")
    for first in result.deadlocks.get("first", []):
        print("    " + first.replace("\n", "\n    "))
    print(f"  invariants: {s['integrity']}")
    print(f"  final sweep: {s['sweep']}")
    print(f"  left after the sweep, datasets of finished runs: {s['leftovers'].get('finished_runs')}")
    print(f"  left after the sweep, datasets of runs failed or cut: {s['leftovers'].get('unfinished_runs')}")
    exports = s["exports"]
    print(
        f"  last export equals the final labels: {exports.get('equal')} of {exports.get('datasets')} datasets; "
        f"equal on the images it writes, naming the {exports.get('left_out_images')} it leaves out: "
        f"{exports.get('equal_but_left_out')} more (reasons {exports.get('left_out_reasons')})"
        + (f"; differences {exports['differences']}" if exports.get("differences") else "")
    )
    load_cps = s["load_bench"].get("cycles_per_s")
    print(
        f"  throughput: {s['cycles']} task cycles, {s['cycles_per_s']} cycles/s; bench/load.py in the same run "
        + (
            f"{load_cps:.1f} cycles/s"
            if load_cps is not None
            else f"not run {s['load_bench'].get('error', '')}"
        )
    )
    print("  (the machine is shared, so figures vary with other load)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="60 s of crowd instead of 10 minutes")
    parser.add_argument("--duration", type=float, default=None)
    parser.add_argument("--clients", type=int, default=32, help="concurrent simulated clients (32 or more)")
    parser.add_argument("--images", type=int, default=8, help="images per simulator run")
    parser.add_argument(
        "--drain",
        type=float,
        default=None,
        help="seconds the runs under way may take to finish after the faults (then they are cut short; "
        "default 300, --quick 240)",
    )
    parser.add_argument("--kill-every", type=float, default=3.0, help="seconds between faults")
    parser.add_argument("--load-seconds", type=float, default=None, help="bench/load.py beside it (0: not)")
    parser.add_argument("--pg-log", default=None, help="the PostgreSQL server log (default: found)")
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("BENCH_POSTGRES_URL", f"postgres://postgres@{HOST}:5432/postgres"),
    )
    parser.add_argument("--db-name", default=DB_NAME, help="the throwaway database (created and dropped)")
    parser.add_argument("--keep", action="store_true", help="keep the database and the logs")
    parser.add_argument("--json", help="also write the summary a test asserts on to this file")
    args = parser.parse_args()
    duration = args.duration or (60.0 if args.quick else 600.0)
    # Stopped from outside (a test's timeout): stop the platform's processes too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    result = run(
        duration=duration,
        clients=args.clients,
        admin_url=args.admin_url,
        db_name=args.db_name,
        kill_every=args.kill_every,
        images=args.images,
        drain=args.drain if args.drain is not None else (240.0 if args.quick else 300.0),
        load_seconds=args.load_seconds if args.load_seconds is not None else (20.0 if args.quick else 60.0),
        pg_log=args.pg_log,
        keep=args.keep,
    )
    report(result)
    if args.json:
        Path(args.json).write_text(json.dumps(summary(result), indent=2, default=str))


if __name__ == "__main__":
    main()
