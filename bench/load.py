"""Load under faults: simulated workers (threads on http.client connections) take and answer tasks (next task +
submit) against gunicorn on loopback, on a throwaway PostgreSQL database, while PostgreSQL backends of the app are
killed (pg_terminate_backend) every few seconds and, optionally, a gunicorn worker process is killed with SIGKILL.
The faults stop for the run's last part (recovery, under the same load). Prints requests/s, cycles/s, p50/p95/p99,
answers by status (during faults and after), the same figures for the trivial view (/healthz) as a reference
ratio, and checks nothing was half-written. It asserts nothing (tests/faults/test_load.py runs it and asserts).

Usage: python bench/load.py [--quick] [--duration S] [--clients N] [--kill-every S] [--kill-gunicorn-worker]
       [--tasks N] [--no-cost]
Full mode runs 10 minutes of load; --quick 60 s. Each stage (set-up, load, integrity check) is announced on
stderr with the seconds since the start, so a run cut off by a timeout shows where it was. Needs PostgreSQL (BENCH_POSTGRES_URL, as queue_throughput.py).
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import random
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import queue_throughput as qt  # noqa: E402  (the same database, data and gunicorn set-up)
from proc_cpu import process_cpu_seconds, tree_cpu_seconds  # noqa: E402

HOST = qt.HOST
DB_NAME = "crowdlabel_load"  # --db-name to run two at once
APP_NAME = "crowdlabel-load"
# How a simulated worker takes its tasks (--protocol): the worker page chains them.
PROTOCOLS = {
    "chained": "submit?next=true answers with the next lease: one request per task",
    "separate": "tasks/next, then submit: two requests per task",
}
_CPU = ("app_cpu_ms_per_cycle", "db_cpu_ms_per_cycle")
_T0 = time.monotonic()


def stage(what: str) -> None:
    print(f"[load +{time.monotonic() - _T0:.1f} s] {what}", file=sys.stderr, flush=True)


@dataclass
class Sample:
    started: float  # wall clock
    what: str
    status: int  # 0: the connection failed
    ms: float


@dataclass
class Run:
    samples: list[Sample] = field(default_factory=list)
    faults_until: float = 0.0
    started: float = 0.0
    stopped: float = 0.0
    backends_killed: int = 0
    workers_killed: int = 0
    integrity: dict = field(default_factory=dict)
    cost: dict = field(default_factory=dict)
    protocol: str = "chained"
    client_cpu: float = 0.0  # CPU seconds of this process (the simulated workers) during the load
    server_cpu: float = 0.0  # of gunicorn's process tree (a killed worker's counts once its master reaps it)

    def of(self, what: str, after: float | None = None) -> list[Sample]:
        return [s for s in self.samples if s.what == what and (after is None or s.started > after)]


class Worker(threading.Thread):
    """One simulated crowd worker: next task, submit (a 503 retried with the same key, as a client should)."""

    def __init__(self, port: int, token: str | None, stop: threading.Event, out: list[Sample], mode: str):
        super().__init__(daemon=True)
        self.port, self.stop, self.out, self.mode = port, stop, out, mode
        self.headers = {"Authorization": f"Token {token}"} if token else {}
        self.conn = http.client.HTTPConnection(HOST, port, timeout=30)

    def call(self, what, method, path, body=None, **headers):
        started, t0 = time.time(), time.perf_counter()
        try:
            self.conn.request(method, path, body=body, headers={**self.headers, **headers})
            response = self.conn.getresponse()
            data = response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection(HOST, self.port, timeout=30)
            status, data = 0, b""
        self.out.append(Sample(started, what, status, (time.perf_counter() - t0) * 1000))
        return status, data

    def run(self):
        lease = None  # the task in hand: from tasks/next, or (chained) from the last submit's `next`
        while not self.stop.is_set():
            if self.mode == "healthz":
                self.call("healthz", "GET", "/healthz")
                continue
            if lease is None:
                status, data = self.call("next", "GET", "/api/v1/tasks/next")
                if status == 204:
                    time.sleep(0.05)
                if status != 200:
                    continue
                lease = json.loads(data)
            path = f"/api/v1/assignments/{lease['id']}/submit" + (
                "?next=true" if self.mode == "chained" else ""
            )
            body = json.dumps({"answer": {"answer": random.random() < 0.5}}).encode()
            key = uuid.uuid4().hex
            for _ in range(5):
                status, data = self.call(
                    "submit",
                    "POST",
                    path,
                    body,
                    **{"Content-Type": "application/json", "Idempotency-Key": key},
                )
                if status not in (0, 503):
                    break
                time.sleep(0.05)
            lease = None
            if status in (200, 201):
                self.out.append(Sample(time.time(), "cycle", status, 0.0))
                if self.mode == "chained":
                    lease = json.loads(data)["next"]  # None: no task now, ask tasks/next


def backends_kill(
    admin_url: str, fraction: float = 0.5, db_name: str | None = None, app_name: str = APP_NAME
) -> int:
    """pg_terminate_backend on a random share of the app's backends (those connected as `app_name` to this
    database: another bench or test running beside it keeps its own)."""
    import psycopg

    with psycopg.connect(admin_url.rsplit("/", 1)[0] + f"/{db_name or DB_NAME}", autocommit=True) as admin:
        pids = [
            pid
            for (pid,) in admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND datname = current_database() "
                "AND pid <> pg_backend_pid()",
                (app_name,),
            ).fetchall()
        ]
        chosen = random.sample(pids, max(1, int(len(pids) * fraction))) if pids else []
        return sum(
            1 for pid in chosen if admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
        )


def gunicorn_worker_kill(master_pid: int) -> int:
    children = Path(f"/proc/{master_pid}/task/{master_pid}/children")
    pids = [int(p) for p in children.read_text().split()] if children.exists() else []
    if not pids:
        return 0
    os.kill(random.choice(pids), signal.SIGKILL)  # gunicorn's master starts a new one
    return 1


def integrity_check(database_url: str) -> dict:
    """Nothing half-written: every submitted answer counted once, no task past what it wanted, no task with
    two open leases, no submitted assignment without its answer."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "submitted": one("SELECT count(*) FROM annotation_assignment WHERE state = 'submitted'"),
            "counted": one("SELECT coalesce(sum(answers_count), 0) FROM annotation_task"),
            "over_counted_tasks": one(
                "SELECT count(*) FROM annotation_task t WHERE answers_count <> (SELECT count(*) FROM "
                "annotation_assignment a WHERE a.task_id = t.id AND a.state = 'submitted') "
                "OR answers_count > answers_wanted"
            ),
            "tasks_with_two_open_leases": one(
                "SELECT count(*) FROM (SELECT task_id FROM annotation_assignment WHERE state = 'leased' "
                "GROUP BY task_id HAVING count(*) > 1) x"
            ),
            "submitted_without_answer": one(
                "SELECT count(*) FROM annotation_assignment WHERE state = 'submitted' AND answer IS NULL"
            ),
        }


def wsgi_call(handler, method: str, path: str, token: str, body: bytes = b"", **headers) -> tuple[int, bytes]:
    """One request through Django's WSGI handler, as gunicorn's worker calls it (its HTTP parsing aside):
    the request_started/finished signals run, so a persistent connection gets its health check as under
    gunicorn, which the test client skips."""
    path, _, query = path.partition("?")
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": HOST,
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": HOST,
        "HTTP_HOST": HOST,
        "HTTP_AUTHORIZATION": f"Token {token}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if body:
        environ.update(CONTENT_LENGTH=str(len(body)), CONTENT_TYPE="application/json")
    environ.update({f"HTTP_{name.upper()}": value for name, value in headers.items()})
    status = []
    response = handler(environ, lambda line, _headers, _exc=None: status.append(line))
    try:
        data = b"".join(response)
    finally:
        response.close()  # request_finished, as a WSGI server sends it
    return int(status[0].split()[0]), data


def cycle_cost(token: str, cycles: int = 200, chained: bool = False) -> dict:
    """What one cycle (a task leased and answered) costs, measured in-process where the machine's load changes
    it least: the statements sent to PostgreSQL per cycle (every one, transaction control included: each is a
    round trip), and the CPU per cycle of Django (this process, requests through the WSGI handler gunicorn
    calls, without gunicorn's HTTP handling) and of its PostgreSQL backend (from /proc, so the server must
    run on this machine). Separate: tasks/next, then submit (two requests); chained: one submit?next=true per
    task, which answers with the next lease. Consumes about `cycles` + 3 tasks."""
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    handler = WSGIHandler()
    held = [None]  # chained: the lease the last submit handed out

    def one(key: str) -> None:
        lease = held[0]
        if lease is None:
            status, data = wsgi_call(handler, "GET", "/api/v1/tasks/next", token)
            assert status == 200, data  # setup check, not a timing assertion
            lease = json.loads(data)
        body = json.dumps({"answer": {"answer": True}}).encode()
        path = f"/api/v1/assignments/{lease['id']}/submit"
        if chained:
            path += "?next=true"
        status, data = wsgi_call(handler, "POST", path, token, body, Idempotency_Key=key)
        assert status == 201, data
        held[0] = json.loads(data)["next"] if chained else None

    one("cost-warm")  # prepared statements and caches as a long-running process has them
    with CaptureQueriesContext(connection) as counted:
        one("cost-counted")
    statements = len(counted.captured_queries)
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    db0, app0, wall0 = process_cpu_seconds(pid), time.process_time(), time.perf_counter()
    for i in range(cycles):
        one(f"cost-{chained}-{i}")
    app, db = time.process_time() - app0, process_cpu_seconds(pid) - db0
    wall = time.perf_counter() - wall0
    if held[0] is not None:  # hand the last lease back
        wsgi_call(handler, "POST", f"/api/v1/assignments/{held[0]['id']}/release", token)
    connection.close()
    return {
        "statements_per_cycle": statements,
        "app_cpu_ms_per_cycle": 1000 * app / cycles,
        "db_cpu_ms_per_cycle": 1000 * db / cycles,
        "wall_ms_per_cycle": 1000 * wall / cycles,
        "cycles": cycles,
    }


def drive(port, tokens, mode, seconds, faults=None) -> tuple[list[Sample], float]:
    stop, out = threading.Event(), []
    workers = [Worker(port, t, stop, out, mode) for t in tokens]
    for w in workers:
        w.start()
    last_fault = time.time()
    deadline = time.time() + seconds
    while time.time() < deadline:
        time.sleep(0.1)
        if faults is not None and faults(deadline):
            last_fault = time.time()
    stop.set()
    for w in workers:
        w.join(timeout=60)
    return out, last_fault


def run(
    *,
    duration: float,
    clients: int,
    kill_every: float,
    kill_gunicorn_worker: bool,
    gunicorn_workers: int,
    worker_class: str = "sync",
    threads: int = 1,
    admin_url: str,
    recovery: float | None = None,
    db_name: str = DB_NAME,
    protocol: str = "chained",
    tasks: int | None = None,
    cost: bool = True,
) -> Run:
    """Set up, load with faults, recover, check integrity, tear down. Returns what was measured."""
    global DB_NAME
    DB_NAME = qt.DB_NAME = db_name  # queue_throughput's set-up helpers then create and drop this database
    recovery = recovery if recovery is not None else min(10.0, duration / 6)
    # Enough tasks that the load does not run dry at the platform's best rate, unless the caller says how many.
    n_tasks = tasks or int(max(5_000, 500 * duration))
    var_dir = tempfile.mkdtemp(prefix="crowdlabel-load-")
    database_url = admin_url.rsplit("/", 1)[0] + f"/{DB_NAME}"
    # Persistent connections (DB_CONN_MAX_AGE), or the pool's with DB_POOL=1 in the environment (which needs
    # DB_CONN_MAX_AGE 0): the ones a kill leaves dead in each process.
    pool = os.environ.get("DB_POOL", "").strip().lower() in {"1", "true", "yes", "on"}
    env = qt.server_env(database_url, var_dir, DB_CONN_MAX_AGE="0" if pool else "600", PGAPPNAME=APP_NAME)
    os.environ.update({k: v for k, v in env.items() if k != "PGAPPNAME"})
    result = Run(protocol=protocol)
    stage(f"creating the database {DB_NAME}")
    qt.database_recreate(admin_url)
    gunicorn = None
    try:
        tokens, _ = qt.data_create(clients, n_tasks)
        stage(f"migrated; {clients} workers and {n_tasks} tasks created")
        if cost:
            # Both protocols side by side, the two-request one as the reference.
            result.cost = {p: cycle_cost(tokens[0], chained=p == "chained") for p in PROTOCOLS}
            stage("one cycle's in-process cost measured")
        port = qt.free_port()
        with open(os.path.join(var_dir, "gunicorn.log"), "w") as log:
            gunicorn = qt.gunicorn_start(port, env, gunicorn_workers, worker_class, log, threads)
            stage(f"gunicorn up on port {port}")
            drive(port, tokens[:4], protocol, 1.0)  # warm-up, not reported
            reference, _ = drive(port, [None] * clients, "healthz", min(10.0, duration / 6))
            next_fault = [time.time() + kill_every]

            def faults(deadline: float) -> bool:
                now = time.time()
                if now > deadline - recovery or now < next_fault[0]:
                    return False
                next_fault[0] = now + kill_every
                result.backends_killed += backends_kill(admin_url)
                if kill_gunicorn_worker:
                    result.workers_killed += gunicorn_worker_kill(gunicorn.pid)
                return True

            stage(f"{duration:.0f} s of load with faults")
            result.started = time.time()
            client0, server0 = time.process_time(), tree_cpu_seconds(gunicorn.pid)
            samples, result.faults_until = drive(port, tokens, protocol, duration, faults)
            server1 = tree_cpu_seconds(gunicorn.pid)
            result.client_cpu = time.process_time() - client0
            result.server_cpu = server1 - server0 if server0 is not None and server1 is not None else 0.0
            result.stopped = time.time()
            result.samples = samples + reference
            qt.gunicorn_stop(gunicorn)
            gunicorn = None
        stage("load over; checking integrity")
        result.integrity = integrity_check(database_url)
    finally:
        if gunicorn is not None:
            qt.gunicorn_stop(gunicorn)
        from django.db import connections

        connections.close_all()
        qt.database_recreate(admin_url, drop_only=True)
        stage("database dropped")
    return result


def report(result: Run, clients: int) -> None:
    load = [s for s in result.samples if s.what in ("next", "submit")]
    cycles = result.of("cycle")
    seconds = result.stopped - result.started
    reference = result.of("healthz")
    ref_seconds = (max(s.started for s in reference) - min(s.started for s in reference)) if reference else 0
    after = [s for s in load if s.started > result.faults_until + 0.5]
    print(
        f"\nload under faults: {clients} simulated workers ({result.protocol}), {seconds:.0f} s, "
        f"{os.cpu_count()} CPU cores"
    )
    print(
        f"  faults: {result.backends_killed} PostgreSQL backends killed, {result.workers_killed} gunicorn "
        f"workers killed, the last {time.strftime('%H:%M:%S', time.localtime(result.faults_until))}"
    )
    print(f"  requests/s {len(load) / seconds:8.1f}    cycles/s {len(cycles) / seconds:8.1f}")
    for what in ("next", "submit"):
        ms = [s.ms for s in result.of(what) if s.status]
        print(
            f"  {what:<7} p50 {qt.percentile(ms, 50):6.1f} ms  p95 {qt.percentile(ms, 95):6.1f} ms  "
            f"p99 {qt.percentile(ms, 99):6.1f} ms"
        )
    cycle_ms = [s.ms for s in load if s.status]
    print(
        f"  all     p50 {qt.percentile(cycle_ms, 50):6.1f} ms  p95 {qt.percentile(cycle_ms, 95):6.1f} ms  "
        f"p99 {qt.percentile(cycle_ms, 99):6.1f} ms"
    )
    print(f"  answers by status, whole run: {dict(sorted(Counter(s.status for s in load).items()))}")
    print(f"  answers by status, after the faults: {dict(sorted(Counter(s.status for s in after).items()))}")
    if reference and ref_seconds:
        ref_rps = len(reference) / ref_seconds
        print(
            f"  reference /healthz: {ref_rps:8.1f} req/s, p99 "
            f"{qt.percentile([s.ms for s in reference if s.status], 99):6.1f} ms; "
            f"load requests/s over it: {len(load) / seconds / ref_rps:.2f}"
        )
    print(f"  integrity: {result.integrity}")
    for name, cost in result.cost.items():
        cpu = cost["app_cpu_ms_per_cycle"] + cost["db_cpu_ms_per_cycle"]
        print(
            f"  one cycle in-process, {name} ({PROTOCOLS[name]}; {cost['cycles']} cycles, no load generator, no "
            f"faults): {cost['statements_per_cycle']} statements (round trips), CPU "
            f"{cost['app_cpu_ms_per_cycle']:.1f} ms Django + {cost['db_cpu_ms_per_cycle']:.1f} ms PostgreSQL, "
            f"{cost['wall_ms_per_cycle']:.1f} ms wall: {os.cpu_count()} idle cores could serve at most "
            f"{1000 * (os.cpu_count() or 1) / cpu:.0f} cycles/s"
        )
    if len(result.cost) == len(PROTOCOLS):
        chained, separate = (sum(result.cost[p][k] for k in _CPU) for p in ("chained", "separate"))
        print(
            f"  in-process CPU per cycle, chained vs separate: {chained:.1f} vs {separate:.1f} ms "
            f"({separate / chained:.2f}x the cycles per CPU second)"
        )
    if cycles:
        print(
            f"  CPU per cycle under this load: {1000 * result.client_cpu / len(cycles):.1f} ms the simulated "
            f"workers (this process), {1000 * result.server_cpu / len(cycles):.1f} ms gunicorn (its HTTP "
            "handling included; PostgreSQL not counted)"
            + (", a killed worker's CPU lost" if result.workers_killed else "")
        )
    print("  (status 0: the connection failed; the machine is shared, so figures vary with other load)")


def summary(result: Run) -> dict:
    """The figures a test asserts on (tests/faults/test_load.py), as JSON."""
    load = [s for s in result.samples if s.what in ("next", "submit")]
    after = [s for s in load if s.started > result.faults_until + 0.5]
    return {
        "backends_killed": result.backends_killed,
        "workers_killed": result.workers_killed,
        "requests": len(load),
        "cycles": len(result.of("cycle")),
        "cycles_after_faults": len([s for s in result.of("cycle") if s.started > result.faults_until + 0.5]),
        "status": {str(k): v for k, v in Counter(s.status for s in load).items()},
        "status_after_faults": {str(k): v for k, v in Counter(s.status for s in after).items()},
        "integrity": result.integrity,
        "cost": result.cost,
        "client_cpu_seconds": result.client_cpu,
        "server_cpu_seconds": result.server_cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="60 s of load instead of 10 minutes")
    parser.add_argument("--duration", type=float, default=None)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--kill-every", type=float, default=3.0, help="seconds between backend kills")
    parser.add_argument("--kill-gunicorn-worker", action="store_true", help="also SIGKILL a gunicorn worker")
    parser.add_argument("--gunicorn-workers", type=int, default=4)
    parser.add_argument(
        "--worker-class",
        default="sync",
        help="gunicorn worker class (sync closes each HTTP connection; gthread keeps it)",
    )
    parser.add_argument("--threads", type=int, default=1, help="threads per gunicorn worker (gthread)")
    parser.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        default="chained",
        help="; ".join(f"{k}: {v}" for k, v in PROTOCOLS.items()),
    )
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("BENCH_POSTGRES_URL", f"postgres://postgres@{HOST}:5432/postgres"),
    )
    parser.add_argument("--db-name", default=DB_NAME, help="the throwaway database (created and dropped)")
    parser.add_argument("--json", help="also write the summary a test asserts on to this file")
    parser.add_argument(
        "--tasks", type=int, default=None, help="tasks to queue (default: enough for the duration at 500/s)"
    )
    parser.add_argument(
        "--no-cost", action="store_true", help="skip measuring one cycle's cost in-process (400 cycles)"
    )
    args = parser.parse_args()
    if args.tasks is not None and args.tasks < 100:
        parser.error(f"--tasks {args.tasks}: queue at least 100 tasks")
    duration = args.duration or (60.0 if args.quick else 600.0)
    result = run(
        duration=duration,
        clients=args.clients,
        kill_every=args.kill_every,
        kill_gunicorn_worker=args.kill_gunicorn_worker,
        gunicorn_workers=args.gunicorn_workers,
        worker_class=args.worker_class,
        threads=args.threads,
        admin_url=args.admin_url,
        db_name=args.db_name,
        protocol=args.protocol,
        tasks=args.tasks,
        cost=not args.no_cost,
    )
    report(result, args.clients)
    if args.json:
        Path(args.json).write_text(json.dumps(summary(result), indent=2))


if __name__ == "__main__":
    main()
