"""Queue at scale: lease and submit p50/p99 while the task, assignment, vote and final-label tables grow to
millions of finished rows over many datasets; the lease's and the submit's plans at the largest size; the
organizer pages' p99 there (target: lease p99 at the largest size within twice its p99 at the smallest, organizer
pages p99 under 300 ms).

Usage: python bench/queue_scale.py [--sizes 10000,1000000,10000000] [--cycles 400] [--live 0.01] [--keep]
       [--reuse] [--skip-pages] [--keep-indexes] [--quick] [--db-name crowdlabel_qscale] [--json PATH]

One database (created, and dropped at the end unless --keep) grows from size to size: 100 datasets, 20 concepts,
200 workers; the rows are COPYed by bench/scale_fill.py as clones of a finished binary vote and a live one made
through the real services, so each size adds `size - tasks already there` tasks, most of them finished (two
answers, two votes, the decision, the final label), the newest kept live (--live of the size, at least
twice the cycles run). A fill that at least doubles the tables builds their indexes after the COPY (unless
--keep-indexes). After each fill: ANALYZE, then --cycles lease + submit cycles, one after the other, by 10 of
the workers in turn, each request through Django's WSGI handler in this process as gunicorn calls it (middleware,
token authentication, the view, the queue's prepared statements; no HTTP parsing or network), timed one by one.
At the largest size each statement of one lease and of one submit is run once more under
`EXPLAIN (ANALYZE, BUFFERS)` (inside a savepoint rolled back before the real statement runs: same rows, same
state) and summarised; then the counters are recounted (the fill bypasses them) and every organizer page and
endpoint of one dataset is timed as bench/organizer_pages.py times them, with the organizer owning all 100.
--reuse continues from a database a --keep run left (a size it already holds is measured without a fill).
It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
import queue_throughput as qt  # noqa: E402  (database creation, the server's environment)
import scale_fill  # noqa: E402
from load import wsgi_call  # noqa: E402

DB_NAME = "crowdlabel_qscale"
PREFIX = "scale"
TEMPLATE_DATASET = f"{PREFIX}-templates"
N_DATASETS, N_CONCEPTS, N_WORKERS, N_MEASURING = 100, 20, 200, 10
DONE_SHA, LIVE_SHA = (
    "e" * 64,
    "d" * 64,
)  # the template images: no filled image's sha256 (its id in hex) is either
TARGET_PAGES_MS = 300.0
WARM_CYCLES = 20  # untimed cycles before each size's timed ones
BIG_TABLES = (
    "annotation_task",
    "annotation_assignment",
    "consensus_question",
    "consensus_vote",
    "annotation_finallabel",
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- set-up: datasets, workers, templates


def base_ensure() -> dict:
    """The datasets, concepts, workers and the two template tasks, made through the services once (found again
    on --reuse). Returns their ids, the measuring workers' tokens and the dataset names."""
    from django.contrib.auth.models import Group, User
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.management import call_command
    from django.utils import timezone
    from organizer_pages import ORGANIZER

    from annotation.models import Assignment, Dataset, Image, Task, TaskState
    from config.roles import ORGANIZERS, WORKERS
    from consensus import binary_vote
    from crowd.models import Worker
    from crowd.services import token_for, user_create
    from hierarchy.models import Concept

    call_command("migrate", verbosity=0, interactive=False)
    names = [f"{PREFIX}-{d:03d}" for d in range(N_DATASETS)]
    if not Dataset.objects.filter(name=names[0]).exists():
        organizer = User.objects.create_user(username=ORGANIZER, password="bench-password-1")
        organizer.groups.add(Group.objects.get_or_create(name=ORGANIZERS)[0])
        concepts = Concept.objects.bulk_create(
            [Concept(wnid=f"n9{k:07d}", name=f"class {k}", gloss="") for k in range(N_CONCEPTS)]
        )
        for name in names:
            dataset = Dataset.objects.create(name=name)
            dataset.organizers.add(organizer)
            dataset.concepts.set(concepts)
        for i in range(N_WORKERS):
            user_create(username=f"{PREFIX}-w{i:03d}", password=None, roles=(WORKERS,))
        # The templates live in a dataset of their own, archived once they are made, so no lease ever takes
        # the live one (an archived dataset hands out nothing).
        first = Dataset.objects.create(name=TEMPLATE_DATASET)
        first.concepts.set(concepts)
        images = [
            Image.objects.create(
                dataset=first, file=f"scale/{sha[:8]}.jpg", original_name=f"{sha[:8]}.jpg", width=640,
                height=480, sha256=sha, phash="0" * 16,
            )
            for sha in (DONE_SHA, LIVE_SHA)
        ]  # fmt: skip
        tasks = binary_vote.vote_tasks_create(
            dataset=first, concept=concepts[0], images=images, answers_wanted=3
        )
        # The finished template answered as any worker answers: two yes votes close a majority of three.
        handler = WSGIHandler()
        for user in User.objects.filter(username__startswith=f"{PREFIX}-w").order_by("username")[:2]:
            status, data = wsgi_call(handler, "GET", "/api/v1/tasks/next", token_for(user))
            if status != 200 or Assignment.objects.get(pk=json.loads(data)["id"]).task_id != tasks[0].pk:
                raise SystemExit(f"template lease: {status} {data[:300]!r}")
            answer = json.dumps({"answer": {"answer": True}}).encode()
            path = f"/api/v1/assignments/{json.loads(data)['id']}/submit"
            status, data = wsgi_call(
                handler, "POST", path, token_for(user), answer, Idempotency_Key="template"
            )
            if status != 201:
                raise SystemExit(f"template submit: {status} {data[:300]!r}")
        Dataset.objects.filter(pk=first.pk).update(archived_at=timezone.now())
    done = Task.objects.get(dataset__name=TEMPLATE_DATASET, image__sha256=DONE_SHA)
    live = Task.objects.get(dataset__name=TEMPLATE_DATASET, image__sha256=LIVE_SHA)
    if done.state != TaskState.DONE or live.state != TaskState.OPEN:
        raise SystemExit(f"templates: finished task is {done.state}, live task is {live.state}")
    concepts = list(Concept.objects.filter(wnid__startswith="n9").order_by("wnid"))
    workers = list(Worker.objects.filter(user__username__startswith=f"{PREFIX}-w").order_by("user__username"))
    return {
        "names": names,
        "dataset_ids": list(
            Dataset.objects.filter(name__in=names).order_by("name").values_list("id", flat=True)
        ),
        "concepts": concepts,
        "worker_ids": [w.pk for w in workers],
        "tokens": [token_for(w.user) for w in workers[:N_MEASURING]],
        "templates": (done.pk, live.pk),
    }


def grow(
    base: dict, size: int, live_share: float, cycles: int, dsn: str, keep_indexes: bool = False
) -> dict | None:
    """COPY tasks until there are `size`; the newest kept open so that `live_share` of the size (at least
    twice `cycles` and their warm-up) is live. Then ANALYZE. None when the database holds `size` tasks
    already. A fill that at least doubles the tables sets their indexes aside and builds them again (unless
    `keep_indexes`)."""

    from annotation.vote_tasks import question_text

    with psycopg.connect(dsn, autocommit=True) as conn:
        current = conn.execute("SELECT count(*) FROM annotation_task").fetchone()[0]
        live_now = conn.execute(
            "SELECT count(*) FROM annotation_task WHERE state IN ('open', 'leased')"
        ).fetchone()[0]
        if size <= current:
            return None
        n_new = size - current
        live = min(n_new, max(0, max(round(live_share * size), 2 * (cycles + WARM_CYCLES)) - live_now))
        with conn.cursor() as cursor:
            templates = scale_fill.templates_read(cursor, *base["templates"])
        plan = scale_fill.Plan(
            n_new=n_new,
            live=live,
            dataset_ids=base["dataset_ids"],
            concept_ids=[c.pk for c in base["concepts"]],
            worker_ids=base["worker_ids"],
            payloads=scale_fill.payloads_by_concept(base["concepts"], question_text),
        )
        t0 = time.perf_counter()
        rebuild = n_new >= current and not keep_indexes
        written = scale_fill.fill(conn, templates, plan, np.datetime64("now", "s"), rebuild, progress=log)
        fill_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        conn.execute("ANALYZE")
        analyze_s = time.perf_counter() - t0
        sizes = {t: conn.execute("SELECT pg_total_relation_size(%s)", (t,)).fetchone()[0] for t in BIG_TABLES}
        database_bytes = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    return {
        "added_tasks": n_new,
        "added_live": live,
        "indexes_rebuilt": rebuild,
        "rows": written,
        "fill_s": fill_s,
        "analyze_s": analyze_s,
        "table_bytes": sizes,
        "database_bytes": database_bytes,
    }


def fill_checks(dsn: str) -> dict[str, int]:
    """What must hold of the filled rows (0 each): every task's answer count equals its submitted answers, every
    question's vote counts its votes, every answer names its task's dataset, and no answer, vote or final label
    points at a row that is not there."""

    queries = {
        "task_answer_count_mismatch": "SELECT count(*) FROM annotation_task t LEFT JOIN (SELECT task_id, count(*) n "
        "FROM annotation_assignment WHERE state = 'submitted' GROUP BY task_id) a ON a.task_id = t.id "
        "WHERE t.answers_count <> COALESCE(a.n, 0)",
        "question_vote_count_mismatch": "SELECT count(*) FROM consensus_question q LEFT JOIN (SELECT question_id, "
        "count(*) n FROM consensus_vote GROUP BY question_id) v ON v.question_id = q.id "
        "WHERE q.yes_count + q.no_count <> COALESCE(v.n, 0)",
        "assignment_without_task": "SELECT count(*) FROM annotation_assignment a "
        "WHERE NOT EXISTS (SELECT 1 FROM annotation_task t WHERE t.id = a.task_id)",
        "assignment_dataset_not_its_tasks": "SELECT count(*) FROM annotation_assignment a "
        "JOIN annotation_task t ON t.id = a.task_id WHERE a.dataset_id IS DISTINCT FROM t.dataset_id",
        "vote_without_answer": "SELECT count(*) FROM consensus_vote v "
        "WHERE NOT EXISTS (SELECT 1 FROM annotation_assignment a WHERE a.id = v.assignment_id)",
        "final_label_without_image": "SELECT count(*) FROM annotation_finallabel f "
        "WHERE NOT EXISTS (SELECT 1 FROM annotation_image i WHERE i.id = f.image_id)",
        "done_question_without_final_label": "SELECT count(*) FROM consensus_question q WHERE q.state = 'accepted' "
        "AND NOT EXISTS (SELECT 1 FROM annotation_finallabel f WHERE f.image_id = q.image_id "
        "AND f.concept_id = q.concept_id)",
    }
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {name: conn.execute(sql).fetchone()[0] for name, sql in queries.items()}


# ---------------------------------------------------------------- measuring


def cycles_run(tokens: list[str], cycles: int, warm: int = WARM_CYCLES) -> dict:
    """`cycles` lease + submit cycles by the workers in turn, each request timed; `warm` untimed first."""
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection

    handler = WSGIHandler()
    lease_ms, submit_ms, errors, empty = [], [], {}, 0
    for i in range(warm + cycles):
        token = tokens[i % len(tokens)]
        t0 = time.perf_counter()
        status, data = wsgi_call(handler, "GET", "/api/v1/tasks/next", token)
        t1 = time.perf_counter()
        if status == 204:
            empty += 1
            continue
        if status != 200:
            errors[f"next: HTTP {status}"] = errors.get(f"next: HTTP {status}", 0) + 1
            continue
        body = json.dumps({"answer": {"answer": True}}).encode()
        path = f"/api/v1/assignments/{json.loads(data)['id']}/submit"
        t2 = time.perf_counter()
        status, data = wsgi_call(
            handler, "POST", path, token, body, Idempotency_Key=f"scale-{time.time_ns()}"
        )
        t3 = time.perf_counter()
        if status != 201:
            errors[f"submit: HTTP {status}"] = errors.get(f"submit: HTTP {status}", 0) + 1
            continue
        if i >= warm:
            lease_ms.append((t1 - t0) * 1000)
            submit_ms.append((t3 - t2) * 1000)
    connection.close()

    def stats(values):
        return {"n": len(values), "p50": qt.percentile(values, 50), "p99": qt.percentile(values, 99)}

    return {
        "lease": stats(lease_ms),
        "submit": stats(submit_ms),
        "slowest": {"lease": sorted(lease_ms)[-5:], "submit": sorted(submit_ms)[-5:]},
        "errors": errors,
        "queue_empty": empty,
    }


def _plan_nodes(node: dict, found: list[dict]) -> list[dict]:
    found.append(node)
    for child in node.get("Plans", ()):
        _plan_nodes(child, found)
    return found


def plan_summary(sql: str, plan: dict) -> dict:
    """The figures of one EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON): time, buffers, how each table is read, and
    what would degrade with size (a sequential scan, a sort of many rows)."""
    top = plan["Plan"]
    nodes = _plan_nodes(top, [])
    reads = []
    for n in nodes:
        if "Relation Name" in n or "Index Name" in n:
            how = n["Node Type"] + (f" {n['Index Name']}" if "Index Name" in n else "")
            reads.append(f"{n.get('Relation Name', '?')}: {how} ({n.get('Actual Rows', 0)} rows)")
    degraded = [
        f"{n['Node Type']} on {n.get('Relation Name', '?')} ({n.get('Actual Rows', 0)} rows)"
        for n in nodes
        if n["Node Type"] == "Seq Scan" and n.get("Relation Name") in BIG_TABLES + ("annotation_image",)
    ] + [
        f"Sort of {n.get('Actual Rows', 0)} rows"
        for n in nodes
        if n["Node Type"] in ("Sort", "Incremental Sort") and n.get("Actual Rows", 0) > 1000
    ]
    return {
        "statement": " ".join(sql.split())[:90],
        "ms": plan.get("Execution Time", 0.0),
        "shared_hit": top.get("Shared Hit Blocks", 0),
        "shared_read": top.get("Shared Read Blocks", 0),
        "reads": reads,
        "degraded": degraded,
    }


def explain_one_cycle(token: str) -> dict[str, list[dict]]:
    """One lease and one submit with every statement they send also run under EXPLAIN (ANALYZE, BUFFERS), in a
    savepoint (or a transaction) rolled back before the statement itself runs."""
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection

    handler = WSGIHandler()
    plans: list[dict] = []

    def explain(execute, sql, params, many, context):
        head = sql.lstrip().split(None, 1)[0].upper()
        if not many and head in ("SELECT", "WITH", "INSERT", "UPDATE", "DELETE"):
            raw = connection.connection
            in_tx = raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
            with raw.cursor() as c:
                c.execute("SAVEPOINT bench_explain" if in_tx else "BEGIN")
                try:
                    c.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params)
                    plans.append(plan_summary(sql, c.fetchone()[0][0]))
                except psycopg.Error as exc:
                    plans.append({"statement": " ".join(sql.split())[:90], "error": str(exc).splitlines()[0]})
                finally:
                    c.execute("ROLLBACK TO SAVEPOINT bench_explain" if in_tx else "ROLLBACK")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(explain):
        status, data = wsgi_call(handler, "GET", "/api/v1/tasks/next", token)
        lease_plans, plans = plans, []
        if status != 200:
            raise SystemExit(f"explain: lease answered {status}")
        body = json.dumps({"answer": {"answer": True}}).encode()
        path = f"/api/v1/assignments/{json.loads(data)['id']}/submit"
        status, _ = wsgi_call(handler, "POST", path, token, body, Idempotency_Key=f"explain-{time.time_ns()}")
        if status != 201:
            raise SystemExit(f"explain: submit answered {status}")
    connection.close()
    return {"lease": lease_plans, "submit": plans}


def pages_run(base: dict, repeat: int) -> tuple[float, list[dict]]:
    """Recount the counters the fill bypassed (timed), then time the organizer pages of the first dataset."""
    from django.db import connection
    from organizer_pages import measure

    from annotation.counters import counters_recount

    t0 = time.perf_counter()
    for dataset_id in base["dataset_ids"]:
        counters_recount(dataset_id)
    recount_s = time.perf_counter() - t0
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    rows = measure(base["names"][0], repeat, skip_missing=True)
    connection.close()
    return recount_s, rows


# ---------------------------------------------------------------- report


def report(runs: list[dict], plans: dict | None, pages: tuple[float, list[dict]] | None) -> None:
    cores = os.cpu_count() or 1
    print(
        f"\nPostgreSQL; {N_DATASETS} datasets, {N_CONCEPTS} concepts, {N_WORKERS} workers; requests one at a time "
        f"through Django's WSGI handler in this process; {cores} CPU cores shared with other users of the machine"
    )
    print(
        f"\n{'tasks':>11} {'live':>8} {'fill s':>7} {'GiB':>6} {'lease p50':>9} {'p99':>7} {'submit p50':>10} {'p99':>7} {'n':>5} {'errors':>6}"
    )
    for r in runs:
        fill = r.get("fill") or {}
        gib = fill.get("database_bytes", 0) / 2**30
        print(
            f"{r['size']:>11,} {r['live']:>8,} {fill.get('fill_s', 0):>7.0f} {gib:>6.2f} {r['lease']['p50']:>9.2f} "
            f"{r['lease']['p99']:>7.2f} {r['submit']['p50']:>10.2f} {r['submit']['p99']:>7.2f} "
            f"{r['lease']['n']:>5} {sum(r['errors'].values()):>6}"
        )
    for r in runs:
        if r.get("fill"):
            f = r["fill"]
            rate = sum(f["rows"].values()) / f["fill_s"] if f["fill_s"] else 0
            print(
                f"  to {r['size']:,}: {f['added_tasks']:,} tasks ({f['added_live']:,} live) and "
                f"{sum(f['rows'].values()):,} rows in all copied in {f['fill_s']:.0f} s ({rate:,.0f} rows/s"
                f"{', indexes built after the COPY' if f.get('indexes_rebuilt') else ''}), "
                f"ANALYZE {f['analyze_s']:.0f} s"
            )
        slow = r.get("slowest", {})
        if slow:
            print(
                f"  slowest at {r['size']:,}: lease {', '.join(f'{x:.1f}' for x in slow['lease'])} ms; "
                f"submit {', '.join(f'{x:.1f}' for x in slow['submit'])} ms"
            )
        if r.get("checks"):
            bad = {k: v for k, v in r["checks"].items() if v}
            print(f"  fill checks at {r['size']:,}: {'all hold' if not bad else bad}")
    if len(runs) > 1:
        ratio = runs[-1]["lease"]["p99"] / runs[0]["lease"]["p99"]
        print(
            f"\nlease p99 at {runs[-1]['size']:,} = {ratio:.2f}x its p99 at {runs[0]['size']:,} "
            f"(target within 2x: {'holds' if ratio <= 2 else 'MISSED'})"
        )
    if plans:
        print(f"\nplans at {runs[-1]['size']:,} tasks (EXPLAIN ANALYZE, BUFFERS; shared buffers hit/read):")
        for request, summaries in plans.items():
            print(f"  {request}:")
            for s in summaries:
                if "error" in s:
                    print(f"    {s['statement']}\n      not explained: {s['error']}")
                    continue
                print(f"    {s['ms']:.3f} ms, buffers {s['shared_hit']}/{s['shared_read']}: {s['statement']}")
                for read in s["reads"]:
                    print(f"      {read}")
                for d in s["degraded"]:
                    print(f"      DEGRADED: {d}")
    if pages:
        recount_s, rows = pages
        print(
            f"\norganizer pages at {runs[-1]['size']:,} tasks (counters recounted first in {recount_s:.0f} s):"
        )
        for r in rows:
            flag = "" if r["p99"] < TARGET_PAGES_MS else f"  over the {TARGET_PAGES_MS:.0f} ms target"
            print(f"  {r['url']:<62} {r['queries']:>4} q {r['p50']:>8.1f} {r['p99']:>8.1f} ms{flag}")
        worst = max(rows, key=lambda r: r["p99"])
        print(f"  slowest p99: {worst['url']} at {worst['p99']:.1f} ms (target < {TARGET_PAGES_MS:.0f} ms)")


def dump(path: str | None, runs: list[dict], plans: dict | None, pages: tuple | None) -> None:
    """The figures so far as JSON (after each size, so a run stopped later keeps them)."""
    if path:
        summary = {"runs": runs, "plans": plans, "pages": pages[1] if pages else None}
        summary["recount_s"] = pages[0] if pages else None
        Path(path).write_text(json.dumps(summary, default=str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,1000000,10000000", help="task counts, ascending")
    parser.add_argument("--cycles", type=int, default=400, help="timed lease + submit cycles per size")
    parser.add_argument(
        "--live",
        type=float,
        default=0.01,
        help="share of the tasks left live (at least twice the cycles run)",
    )
    parser.add_argument("--page-repeat", type=int, default=20, help="timed requests per organizer page")
    parser.add_argument("--skip-pages", action="store_true", help="leave the organizer pages out")
    parser.add_argument("--quick", action="store_true", help="sizes 10,000 and 100,000, 200 cycles")
    parser.add_argument("--keep", action="store_true", help="leave the database (for --reuse or inspection)")
    parser.add_argument("--reuse", action="store_true", help="grow the database a --keep run left")
    parser.add_argument(
        "--keep-indexes",
        action="store_true",
        help="COPY through the indexes even when a fill doubles the tables (slower; indexes grown row by row)",
    )
    parser.add_argument("--db-name", default=DB_NAME)
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
    )
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.cycles = "10000,100000", 200
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    dsn = f"{args.admin_url.rsplit('/', 1)[0]}/{args.db_name}"
    os.environ.update(qt.server_env(dsn, tempfile.mkdtemp(prefix="crowdlabel-scale-")))
    if not args.reuse:
        qt.database_recreate(args.admin_url, db_name=args.db_name)
    import django

    django.setup()
    runs, plans, pages = [], None, None
    try:
        base = base_ensure()
        for size in sizes:
            log(f"size {size:,}: filling ...")
            fill = grow(base, size, args.live, args.cycles, dsn, args.keep_indexes)
            if fill:
                log(
                    f"  {fill['added_tasks']:,} tasks copied in {fill['fill_s']:.0f} s, ANALYZE {fill['analyze_s']:.0f} s"
                )
            checks = fill_checks(dsn) if size <= 1_000_000 else None  # whole-table joins: too slow beyond
            with psycopg.connect(dsn) as conn:
                tasks, live = conn.execute(
                    "SELECT count(*), count(*) FILTER (WHERE state IN ('open', 'leased')) FROM annotation_task"
                ).fetchone()
            log(f"  measuring {args.cycles} cycles over {live:,} live tasks ...")
            measured = cycles_run(base["tokens"], args.cycles)
            runs.append(
                {"size": size, "tasks": tasks, "live": live, "fill": fill, "checks": checks, **measured}
            )
            log(
                f"  lease p99 {measured['lease']['p99']:.2f} ms, submit p99 {measured['submit']['p99']:.2f} ms"
            )
            dump(args.json, runs, plans, pages)
        log("explaining one lease and one submit ...")
        plans = explain_one_cycle(base["tokens"][0])
        dump(args.json, runs, plans, pages)
        if not args.skip_pages:
            log("organizer pages ...")
            pages = pages_run(base, args.page_repeat)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            qt.database_recreate(args.admin_url, drop_only=True, db_name=args.db_name)
    report(runs, plans, pages)
    dump(args.json, runs, plans, pages)


if __name__ == "__main__":
    main()
