"""Per-dataset counters the organizer's progress and cost pages read instead of aggregating millions of rows:
image and box counts (`DatasetTally`), micro-tasks, answers and worker-seconds per stage and concept (`UsageCounter`),
answers per worker (`WorkerTally`), and answers and worker-seconds per worker and stage (`WorkerStageTally`).

They change only here, with UPDATEs that add to the stored values inside the caller's transaction (the one that
writes the boxes, tasks or answers they count), so a rolled-back write leaves them untouched and concurrent
writers add up exactly: the row lock an UPDATE takes serializes them until commit. A missing row is created in
a savepoint; when another transaction created it first, the UPDATE runs again. `counters_expected` recomputes every value from the facts
(`manage.py counters_recount` writes it back, for data loaded around the services, e.g. by COPY).

Lock order (docs/architecture.md, *Lock order*): counter rows are the last rows a transaction locks, in one order
for every pipeline, by table name and then key. Inside `held()` (every submit, and the services that create
questions, tasks or boxes in a transaction of their own) additions are summed per row in memory and written
when the block ends, sorted; two transactions then never hold counter rows crosswise, and none holds a counter
row while it waits for anything else. Outside a block each addition is written at once."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from functools import partial

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connections, transaction
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, Sum, Value
from django.db.models.functions import Coalesce, NullIf

from .models import (
    Assignment,
    AssignmentState,
    Box,
    BoxState,
    DatasetTally,
    Image,
    Task,
    UsageCounter,
    WorkerStageTally,
    WorkerTally,
)
from .queue import sqlrows

_MICROSECOND = timedelta(microseconds=1)


def task_stage(task: Task) -> str:
    """The stage a task's work is counted under: a consensus question's kind (its topic), else its kind."""
    return task.topic or task.kind


# --- held additions, written last in (table, key) order --------------------------------------------------


class _Held:
    """The additions of one `held()` block: per counter row, the sum of its deltas."""

    def __init__(self) -> None:
        self.rows: dict[tuple, tuple[object, dict, Counter]] = {}  # (table, key) -> (model, keys, deltas)
        self.workers: dict[tuple[int, int], int] = {}  # (dataset id, worker id) -> answers
        # (dataset id, worker id, stage) -> [answers, worker microseconds]
        self.worker_stages: dict[tuple[int, int, str], list[int]] = {}

    def add(self, model, keys: dict, deltas: dict[str, int]) -> None:
        row = (model._meta.db_table, _sort_key(keys.values()))
        found = self.rows.get(row)
        if found is None:
            found = self.rows[row] = (model, dict(keys), Counter())
        found[2].update(deltas)

    def flush(self, writes: sqlrows.Writes | None = None) -> None:
        """Write what is held, every row in (table, key) order, and forget it: now, or into `writes` (a
        submit's, sent with its other writes)."""
        rows, self.rows = self.rows, {}
        workers, self.workers = self.workers, {}
        worker_stages, self.worker_stages = self.worker_stages, {}
        ordered: list[tuple[tuple, Callable[[], None]]] = []
        for (table, key), (model, keys, deltas) in rows.items():
            ordered.append(((table, key), partial(_counter_add_now, model, keys, dict(deltas), writes)))
        for (dataset_id, worker_id), answers in workers.items():
            ordered.append(
                (
                    (WorkerTally._meta.db_table, _sort_key((dataset_id, worker_id))),
                    partial(_worker_add_now, dataset_id, worker_id, answers, writes),
                )
            )
        for (dataset_id, worker_id, stage), (answers, microseconds) in worker_stages.items():
            ordered.append(
                (
                    (WorkerStageTally._meta.db_table, _sort_key((dataset_id, worker_id, stage))),
                    partial(
                        _worker_stage_add_now, dataset_id, worker_id, stage, answers, microseconds, writes
                    ),
                )
            )
        for _, write in sorted(ordered, key=lambda kv: kv[0]):
            write()


def _sort_key(values: Iterable) -> tuple:
    # NULL keys (a stage without a concept) sort first; every key column of one table has one type.
    return tuple((v is not None, v) for v in values)


_HELD: dict[int, _Held] = {}  # by id(connection) while a held() block is open on it


@contextlib.contextmanager
def held(using: str = DEFAULT_DB_ALIAS) -> Iterator[_Held]:
    """Counter additions made inside the block are summed per row and written when it ends, sorted by (table,
    key), or earlier by `.flush(writes)` (a submit puts them last in its writes, which it sends before it leases
    the next task). Use it inside the
    transaction the additions belong to; a block inside another adds to the outer one, and an error in the
    block drops what is held (the transaction is rolled back anyway). An addition made inside a savepoint that
    is rolled back while the block goes on stays held, so count outside such savepoints (every service does)."""
    connection = connections[using]
    outer = _HELD.get(id(connection))
    if outer is not None:
        yield outer
        return
    batch = _HELD[id(connection)] = _Held()
    try:
        yield batch
        batch.flush()
    finally:
        del _HELD[id(connection)]


def counter_add(model, keys: dict, deltas: dict[str, int]) -> None:
    """Add `deltas` to the counter row of `model` with `keys` (one UPDATE adding to the columns; a missing row
    is created): at the end of the `held()` block around it, else at once."""
    deltas = {name: d for name, d in deltas.items() if d}
    if not deltas:
        return
    batch = _HELD.get(id(connections[model.objects.db]))
    if batch is not None:
        batch.add(model, keys, deltas)
        return
    _counter_add_now(model, keys, deltas)


def _counter_add_now(model, keys: dict, deltas: dict[str, int], writes: sqlrows.Writes | None = None) -> None:
    """The UPDATE of `counter_add`: plain SQL kept per (model, keys, deltas, which keys are NULL) and prepared
    on PostgreSQL, since these counters change inside every submit and the ORM's F() update took longer to build
    than the database to run it. With `writes` (a submit's), it goes with them."""
    deltas = {name: d for name, d in deltas.items() if d}
    if not deltas:
        return
    connection = connections[model.objects.db]
    shape = (
        connection.vendor,
        model,
        tuple(keys),
        tuple(k for k, v in keys.items() if v is None),
        tuple(deltas),
    )
    sql = _ADD_SQL.get(shape)
    if sql is None:
        sql = _ADD_SQL[shape] = _add_sql(connection, *shape[1:])
    params = [*deltas.values(), *(v for v in keys.values() if v is not None)]

    def created(changed: int, _returned=None) -> None:
        if changed:
            return
        try:
            with transaction.atomic(using=connection.alias):
                model.objects.create(**keys, **deltas)
        except IntegrityError:  # another transaction created the row meanwhile (it waited for its commit)
            with sqlrows.cursor(connection) as cursor:
                cursor.execute(sql, params)

    # With a submit's writes it is held until they are sent; a missing row is created once it is.
    sqlrows.write(connection, model._meta.db_table, sql, params, writes=writes, on_done=created)


_ADD_SQL: dict[tuple, str] = {}  # by (vendor, model, keys, NULL keys, deltas): a few dozen shapes in all


def _add_sql(
    connection, model, keys: tuple[str, ...], null_keys: tuple[str, ...], deltas: tuple[str, ...]
) -> str:
    qn = connection.ops.quote_name
    column = lambda name: qn(model._meta.get_field(name).column)  # noqa: E731
    sets = ", ".join(f"{column(n)} = {column(n)} + %s" for n in deltas)
    where = " AND ".join(f"{column(k)} IS NULL" if k in null_keys else f"{column(k)} = %s" for k in keys)
    return f"UPDATE {qn(model._meta.db_table)} SET {sets} WHERE {where}"


def images_counted(dataset_id: int, n: int) -> None:
    """Images stored in the dataset."""
    counter_add(DatasetTally, {"dataset_id": dataset_id}, {"images": n})


def boxes_counted(dataset_id: int, *, drawn: int = 0, accepted: int = 0) -> None:
    """Boxes drawn in the dataset, and the change in how many of them are accepted."""
    counter_add(DatasetTally, {"dataset_id": dataset_id}, {"boxes_drawn": drawn, "boxes_accepted": accepted})


def accepted_delta(before: Iterable[str], after: Iterable[str]) -> int:
    """How many more boxes are accepted after a change of states (the states before and after, same boxes)."""
    return sum(s == BoxState.ACCEPTED for s in after) - sum(s == BoxState.ACCEPTED for s in before)


def _usage_key(dataset_id: int, stage: str, concept_id: int | None) -> dict:
    return {"dataset_id": dataset_id, "stage": stage, "concept_id": concept_id}


def tasks_counted(tasks: Iterable[Task]) -> None:
    """New tasks, one counter update per (dataset, stage, concept), in a fixed order (no lock-order deadlock
    between two transactions creating tasks of the same keys)."""
    groups = Counter((t.dataset_id, task_stage(t), t.concept_id) for t in tasks)
    for (dataset_id, stage, concept_id), n in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or 0)
    ):
        counter_add(UsageCounter, _usage_key(dataset_id, stage, concept_id), {"tasks": n})


def answers_counted(task: Task, *, answers: int, worker_time: timedelta | None, worker_id: int) -> None:
    """Submitted answers on the task (negative: taken back) and the time they took (submission minus lease
    time), counted for the task's stage and concept, for the worker who gave them and for that worker and the
    task's stage (the worker's rows created if missing). Inside a submit all go with its other counters, in
    (table, key) order (`held`), which it flushes into its writes (one round trip on PostgreSQL)."""
    usage_answers_counted(task, answers=answers, worker_time=worker_time)
    microseconds = _microseconds(worker_time)
    batch = _HELD.get(id(connections[WorkerTally.objects.db]))
    if batch is not None:
        key = (task.dataset_id, worker_id)
        batch.workers[key] = batch.workers.get(key, 0) + answers
        added = batch.worker_stages.setdefault((task.dataset_id, worker_id, task_stage(task)), [0, 0])
        added[0] += answers
        added[1] += microseconds
    else:
        _worker_add_now(task.dataset_id, worker_id, answers)
        _worker_stage_add_now(task.dataset_id, worker_id, task_stage(task), answers, microseconds)


def usage_answers_counted(task: Task, *, answers: int, worker_time: timedelta | None) -> None:
    """The usage row's part of `answers_counted` alone (an import counts its workers apart, after every usage
    row)."""
    counter_add(
        UsageCounter,
        _usage_key(task.dataset_id, task_stage(task), task.concept_id),
        {"answers": answers, "worker_microseconds": _microseconds(worker_time)},
    )


def _microseconds(spent: timedelta | None) -> int:
    return 0 if spent is None else spent // _MICROSECOND


def _worker_upsert_sql(connection, n_rows: int) -> str:
    """INSERT of (dataset, worker, answers) rows that adds the answers to a worker's existing row instead."""
    table = connection.ops.quote_name(WorkerTally._meta.db_table)
    values = ", ".join(["(%s, %s, %s)"] * n_rows)
    return (
        f"INSERT INTO {table} (dataset_id, worker_id, answers) VALUES {values} "
        f"ON CONFLICT (dataset_id, worker_id) DO UPDATE SET answers = {table}.answers + excluded.answers"
    )


def _worker_add_now(
    dataset_id: int, worker_id: int, answers: int, writes: sqlrows.Writes | None = None
) -> None:
    """Upsert one worker's row (zero included: the row says the worker answered here): now, or with a
    submit's `writes`."""
    connection = connections[WorkerTally.objects.db]
    sqlrows.write(
        connection,
        WorkerTally._meta.db_table,
        _worker_upsert_sql(connection, 1),
        [dataset_id, worker_id, answers],
        writes=writes,
    )


def _worker_stage_upsert_sql(connection, n_rows: int) -> str:
    """INSERT of (dataset, worker, stage, answers, microseconds) rows that adds to an existing row instead."""
    table = connection.ops.quote_name(WorkerStageTally._meta.db_table)
    values = ", ".join(["(%s, %s, %s, %s, %s)"] * n_rows)
    return (
        f"INSERT INTO {table} (dataset_id, worker_id, stage, answers, worker_microseconds) VALUES {values} "
        f"ON CONFLICT (dataset_id, worker_id, stage) DO UPDATE SET answers = {table}.answers + excluded.answers, "
        f"worker_microseconds = {table}.worker_microseconds + excluded.worker_microseconds"
    )


def _worker_stage_add_now(
    dataset_id: int,
    worker_id: int,
    stage: str,
    answers: int,
    microseconds: int,
    writes: sqlrows.Writes | None = None,
) -> None:
    """Upsert one worker's row for one stage (zeros included: the row says the worker answered it here): now,
    or with a submit's `writes`."""
    connection = connections[WorkerStageTally.objects.db]
    sqlrows.write(
        connection,
        WorkerStageTally._meta.db_table,
        _worker_stage_upsert_sql(connection, 1),
        [dataset_id, worker_id, stage, answers, microseconds],
        writes=writes,
    )


def worker_stages_counted(dataset_id: int, added: dict[tuple[int, str], tuple[int, int]]) -> None:
    """Add (answers, worker microseconds) per (worker id, stage), zeros included, a statement per 180 rows, in
    key order."""
    connection = connections[WorkerStageTally.objects.db]
    keys = sorted(added)
    with connection.cursor() as cursor:
        for lo in range(0, len(keys), 180):  # 900 parameters at most (SQLite's old limit is 999)
            chunk = keys[lo : lo + 180]
            params = [v for w, stage in chunk for v in (dataset_id, w, stage, *added[(w, stage)])]
            cursor.execute(_worker_stage_upsert_sql(connection, len(chunk)), params)


def workers_counted(dataset_id: int, answers: dict[int, int]) -> None:
    """Add answers per worker id (zero included: a worker whose answers were all taken back still answered
    here), a statement per 300 workers, workers in id order."""
    connection = connections[WorkerTally.objects.db]
    ids = sorted(answers)
    with connection.cursor() as cursor:
        for lo in range(0, len(ids), 300):  # 900 parameters at most (SQLite's old limit is 999)
            chunk = ids[lo : lo + 300]
            params = [value for w in chunk for value in (dataset_id, w, answers[w])]
            cursor.execute(_worker_upsert_sql(connection, len(chunk)), params)


def _stage_expression(prefix: str = ""):
    return Coalesce(NullIf(f"{prefix}topic", Value("")), f"{prefix}kind")


def answers_read(dataset_id: int) -> list[dict]:
    """The dataset's submitted and withdrawn answers grouped by worker, stage and concept: {worker_id, stage,
    concept_id, answers (submitted), worker_microseconds (of the submitted)}, in one query. Every recount of
    answer counters reads them from here, so a recount reads the dataset's answers once."""
    submitted = Q(state=AssignmentState.SUBMITTED)
    spent = ExpressionWrapper(F("submitted_at") - F("leased_at"), output_field=DurationField())
    return [
        {
            "worker_id": row["worker_id"],
            "stage": row["stage"],
            "concept_id": row["task__concept_id"],
            "answers": row["n"],
            "worker_microseconds": (row["spent"] or timedelta(0)) // _MICROSECOND,
        }
        for row in Assignment.objects.filter(
            task__dataset_id=dataset_id, state__in=(AssignmentState.SUBMITTED, AssignmentState.WITHDRAWN)
        )
        .values("worker_id", "task__concept_id", stage=_stage_expression("task__"))
        .annotate(n=Count("id", filter=submitted), spent=Sum(spent, filter=submitted))
        .order_by()
    ]


def counters_expected(
    dataset_id: int, answers: list[dict] | None = None
) -> tuple[dict[str, int], dict[tuple[str, int | None], dict[str, int]]]:
    """What the counters of a dataset should hold, recomputed from its boxes, tasks and answers (`answers`: what
    `answers_read` returned, read when not given): the tally's fields, and {(stage, concept id): {tasks,
    answers, worker_microseconds}}."""
    boxes = Box.objects.filter(image__dataset_id=dataset_id).aggregate(
        drawn=Count("id"), accepted=Count("id", filter=Q(state=BoxState.ACCEPTED))
    )
    tally = {
        "images": Image.objects.filter(dataset_id=dataset_id).count(),
        "boxes_drawn": boxes["drawn"],
        "boxes_accepted": boxes["accepted"],
    }
    usage: dict[tuple[str, int | None], dict[str, int]] = {}
    for row in (
        Task.objects.filter(dataset_id=dataset_id)
        .values("concept_id", stage=_stage_expression())
        .annotate(n=Count("id"))
        .order_by()
    ):
        usage[(row["stage"], row["concept_id"])] = {"tasks": row["n"], "answers": 0, "worker_microseconds": 0}
    for row in answers_read(dataset_id) if answers is None else answers:
        if not row["answers"]:  # withdrawn answers only: no usage
            continue
        entry = usage.setdefault(
            (row["stage"], row["concept_id"]), {"tasks": 0, "answers": 0, "worker_microseconds": 0}
        )
        entry["answers"] += row["answers"]
        entry["worker_microseconds"] += row["worker_microseconds"]
    return tally, usage


def counters_stored(dataset_id: int) -> tuple[dict[str, int], dict[tuple[str, int | None], dict[str, int]]]:
    """The counters as stored, in the shape of `counters_expected` (zero rows left out)."""
    fields = ("images", "boxes_drawn", "boxes_accepted")
    found = DatasetTally.objects.filter(dataset_id=dataset_id).values(*fields).first()
    tally = found or dict.fromkeys(fields, 0)
    usage = {
        (r["stage"], r["concept_id"]): {k: r[k] for k in ("tasks", "answers", "worker_microseconds")}
        for r in UsageCounter.objects.filter(dataset_id=dataset_id).values(
            "stage", "concept_id", "tasks", "answers", "worker_microseconds"
        )
        if r["tasks"] or r["answers"] or r["worker_microseconds"]
    }
    return tally, usage


def worker_stage_tally_expected(
    dataset_id: int, answers: list[dict] | None = None
) -> dict[tuple[int, str], dict[str, int]]:
    """{(worker id, stage): {answers, worker_microseconds}} recomputed from the dataset's answers (`answers`:
    what `answers_read` returned, read when not given), for every worker and stage with a submitted or withdrawn
    answer there."""
    expected: dict[tuple[int, str], dict[str, int]] = {}
    for row in answers_read(dataset_id) if answers is None else answers:
        entry = expected.setdefault(
            (row["worker_id"], row["stage"]), {"answers": 0, "worker_microseconds": 0}
        )
        entry["answers"] += row["answers"]
        entry["worker_microseconds"] += row["worker_microseconds"]
    return expected


def worker_stage_tally_stored(dataset_id: int) -> dict[tuple[int, str], dict[str, int]]:
    """The worker and stage rows as stored, zero rows included, in the shape of `worker_stage_tally_expected`."""
    return {
        (r["worker_id"], r["stage"]): {
            "answers": r["answers"],
            "worker_microseconds": r["worker_microseconds"],
        }
        for r in WorkerStageTally.objects.filter(dataset_id=dataset_id).values(
            "worker_id", "stage", "answers", "worker_microseconds"
        )
    }


def worker_tally_expected(
    dataset_id: int, by_stage: dict[tuple[int, str], dict[str, int]] | None = None
) -> dict[int, int]:
    """{worker id: submitted answers} recomputed from the dataset's assignments (or summed from `by_stage`, what
    `worker_stage_tally_expected` returned), for every worker with a submitted or withdrawn answer there."""
    if by_stage is None:
        by_stage = worker_stage_tally_expected(dataset_id)
    answers: dict[int, int] = {}
    for (worker_id, _), row in by_stage.items():
        answers[worker_id] = answers.get(worker_id, 0) + row["answers"]
    return answers


def worker_tally_stored(dataset_id: int) -> dict[int, int]:
    """The worker rows as stored, zero rows included (a row says the worker answered here)."""
    return dict(WorkerTally.objects.filter(dataset_id=dataset_id).values_list("worker_id", "answers"))


def _worker_tally_recount(dataset_id: int, answers: list[dict]) -> int:
    """Rewrite the dataset's worker and worker-and-stage rows (the caller has locked them) from `answers`
    (`answers_read`); a row no longer expected is deleted."""
    by_stage = worker_stage_tally_expected(dataset_id, answers)
    changed = 0
    stored_stages = worker_stage_tally_stored(dataset_id)
    for worker_id, stage in sorted(set(by_stage) | set(stored_stages)):
        if (worker_id, stage) not in by_stage:
            WorkerStageTally.objects.filter(dataset_id=dataset_id, worker_id=worker_id, stage=stage).delete()
        elif stored_stages.get((worker_id, stage)) != by_stage[(worker_id, stage)]:
            WorkerStageTally.objects.update_or_create(
                dataset_id=dataset_id, worker_id=worker_id, stage=stage, defaults=by_stage[(worker_id, stage)]
            )
        else:
            continue
        changed += 1
    expected, stored = worker_tally_expected(dataset_id, by_stage), worker_tally_stored(dataset_id)
    for worker_id in sorted(set(expected) | set(stored)):
        if worker_id not in expected:
            WorkerTally.objects.filter(dataset_id=dataset_id, worker_id=worker_id).delete()
        elif stored.get(worker_id) != expected[worker_id]:
            WorkerTally.objects.update_or_create(
                dataset_id=dataset_id, worker_id=worker_id, defaults={"answers": expected[worker_id]}
            )
        else:
            continue
        changed += 1
    return changed


def counter_rows_rewrite(
    model, dataset_id: int, key_fields: tuple[str, ...], expected: dict, stored: dict, *, zero: dict[str, int]
) -> int:
    """A recount's writes: the dataset's rows of `model` (keyed by `key_fields` besides the dataset) whose stored
    values differ from `expected` are written, a key no longer expected gets `zero`, in key order; returns how
    many rows changed. The caller has locked the dataset's rows."""
    changed = 0
    for key in sorted(set(expected) | set(stored), key=lambda k: tuple((v is not None, v) for v in k)):
        want = expected.get(key, zero)
        if stored.get(key) != want:
            model.objects.update_or_create(
                dataset_id=dataset_id, **dict(zip(key_fields, key, strict=True)), defaults=want
            )
            changed += 1
    return changed


# Higher apps' own counters (consensus's question tally, gold's tally), rebuilt by `counters_recount` in its transaction:
# dataset id -> how many of their rows changed. Registered in `AppConfig.ready`.
_recounters: list[Callable[[int], int]] = []


def register_recount(fn: Callable[[int], int]) -> Callable[[int], int]:
    if fn not in _recounters:
        _recounters.append(fn)
    return fn


def counters_recount(dataset_id: int) -> int:
    """Rewrite the dataset's counters from the facts; returns how many counter rows changed. The dataset's
    counter rows are locked first, so writers that hold them finish before the recount reads, and the rest
    wait for it. Meant for repairs and bulk loads: a writer that creates a counter row for a key seen for the
    first time while the recount runs is not waited for."""
    with transaction.atomic():
        list(DatasetTally.objects.select_for_update(no_key=True).filter(dataset_id=dataset_id))
        list(UsageCounter.objects.select_for_update(no_key=True).filter(dataset_id=dataset_id).order_by("id"))
        list(
            WorkerStageTally.objects.select_for_update(no_key=True)
            .filter(dataset_id=dataset_id)
            .order_by("id")
        )
        list(WorkerTally.objects.select_for_update(no_key=True).filter(dataset_id=dataset_id).order_by("id"))
        answers = answers_read(dataset_id)  # read once, after the locks, for the usage and the worker rows
        changed = _worker_tally_recount(dataset_id, answers)
        tally, usage = counters_expected(dataset_id, answers)
        stored_tally, stored_usage = counters_stored(dataset_id)
        if tally != stored_tally:
            DatasetTally.objects.update_or_create(dataset_id=dataset_id, defaults=tally)
            changed += 1
        changed += counter_rows_rewrite(
            UsageCounter,
            dataset_id,
            ("stage", "concept_id"),
            usage,
            stored_usage,
            zero={"tasks": 0, "answers": 0, "worker_microseconds": 0},
        )
        for recount in _recounters:
            changed += recount(dataset_id)
        return changed
