"""Services of the micro-task queue: lease the next task, submit an answer once, release, extend and expire
leases.

Locks are always taken task row first, then assignment rows, so leasing, submitting and expiry never deadlock.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connections, transaction
from django.db.models.expressions import RawSQL
from django.utils import timezone

from config import sqlrows

from . import hooks, kinds
from .models import Assignment, AssignmentState, Task, TaskExclusion, TaskState


class QueueError(Exception):
    """A queue operation the caller cannot do; `code` maps to an HTTP status in the API."""

    code = "conflict"


class LeaseExpired(QueueError):
    code = "lease_expired"


class AlreadySubmitted(QueueError):
    code = "already_submitted"


def lease_duration() -> timedelta:
    return timedelta(seconds=settings.CROWDLABEL["LEASE_SECONDS"])


def _eligible_where(connection, *, worker, kinds_wanted, dataset_id, now, apply_filters: bool):
    """The WHERE clause (on task alias `t`) of the tasks `worker` may lease now, and its parameters.

    Open, or leased with an expired lease; of the wanted kinds and dataset; never a task the worker already had
    or is excluded from; never one a registered task filter (annotation.hooks) withholds. The state literals
    are written into the SQL, not bound, so PostgreSQL can prove the queue's partial indexes apply."""
    qn = connection.ops.quote_name
    conditions = [
        f"(t.state = '{TaskState.OPEN}' OR (t.state = '{TaskState.LEASED}' AND t.lease_expires_at < %s))",
        f"NOT EXISTS (SELECT 1 FROM {qn(Assignment._meta.db_table)} a0 "
        "WHERE a0.task_id = t.id AND a0.worker_id = %s)",
        f"NOT EXISTS (SELECT 1 FROM {qn(TaskExclusion._meta.db_table)} x0 "
        "WHERE x0.task_id = t.id AND x0.worker_id = %s)",
    ]
    params: list[Any] = [sqlrows.prep(Task, "lease_expires_at", now, connection), worker.pk, worker.pk]
    if kinds_wanted:
        conditions.append(f"t.kind IN ({', '.join(['%s'] * len(kinds_wanted))})")
        params.extend(kinds_wanted)
    if dataset_id is not None:
        conditions.append("t.dataset_id = %s")
        params.append(dataset_id)
    if apply_filters:
        for task_filter in hooks.task_filters:
            for sql, extra in task_filter(worker, connection):
                conditions.append(sql)
                params.extend(extra)
    return " AND ".join(conditions), params


def available_tasks(
    *,
    worker,
    kinds_wanted: list[str] | None = None,
    dataset_id: int | None = None,
    now=None,
    apply_filters: bool = True,
):
    """Tasks this worker may lease now (the lease's own condition, as a queryset for reports and tests)."""
    connection = connections[Task.objects.db]
    where, params = _eligible_where(
        connection,
        worker=worker,
        kinds_wanted=kinds_wanted,
        dataset_id=dataset_id,
        now=now or timezone.now(),
        apply_filters=apply_filters,
    )
    table = connection.ops.quote_name(Task._meta.db_table)
    return Task.objects.filter(pk__in=RawSQL(f"SELECT t.id FROM {table} t WHERE {where}", params))


@functools.cache
def _columns() -> tuple[sqlrows.Columns, ...]:
    """Assignment, task and the task's subjects that the worker's view shows (image, concept), selected together
    so answering a lease or a submit needs no further query."""
    image = Task._meta.get_field("image").related_model
    concept = Task._meta.get_field("concept").related_model
    return (
        sqlrows.Columns(Assignment, "a"),
        sqlrows.Columns(Task, "t"),
        sqlrows.Columns(image, "i"),
        sqlrows.Columns(concept, "c"),
    )


def _select_list(connection) -> str:
    return ", ".join(columns.sql(connection) for columns in _columns())


def _subject_joins(connection) -> str:
    qn = connection.ops.quote_name
    _, _, image, concept = _columns()
    return (
        f"LEFT JOIN {qn(image.model._meta.db_table)} i ON i.id = t.image_id "
        f"LEFT JOIN {qn(concept.model._meta.db_table)} c ON c.id = t.concept_id"
    )


def _candidate_sql(connection, where: str, lock: str) -> str:
    """The first task to lease, taking datasets in turn (the task's SELECT needs `where`'s parameters twice,
    after the worker's id).

    Priorities order tasks inside their own dataset only; across datasets each worker goes round: first the
    datasets after the one their last lease came from (lowest id first), then, wrapping around, all of them.
    So a dataset with work gets its share of every worker's leases whatever priorities other tenants set. Each
    arm walks the (dataset, priority, id) index and stops at its first row; the second arm runs only when the
    first finds nothing, so a lease locks one row."""
    qn = connection.ops.quote_name
    task_table, assignment_table = qn(Task._meta.db_table), qn(Assignment._meta.db_table)
    last_dataset = (
        f"(SELECT t2.dataset_id FROM {assignment_table} a2 JOIN {task_table} t2 ON t2.id = a2.task_id "
        "WHERE a2.worker_id = %s ORDER BY a2.id DESC LIMIT 1)"
    )
    order = "ORDER BY t.dataset_id, t.priority DESC, t.id LIMIT 1"
    return (
        f"SELECT * FROM (SELECT t.id, t.state FROM {task_table} t WHERE {where} "
        f"AND t.dataset_id > COALESCE({last_dataset}, 0) {order} {lock}) after_last "
        f"UNION ALL SELECT * FROM (SELECT t.id, t.state FROM {task_table} t WHERE {where} {order} {lock}) wrapped "
        "LIMIT 1"
    )


def _candidate_params(worker, params: list) -> list:
    return [*params, worker.pk, *params]


def _assignment_from_row(connection, row) -> Assignment:
    assignment_cols, task_cols, image_cols, concept_cols = _columns()
    assignment = assignment_cols.build(connection, row)
    start = len(assignment_cols)
    task = task_cols.build(connection, row, start)
    start += len(task_cols)
    task.image = image_cols.build(connection, row, start)
    task.concept = concept_cols.build(connection, row, start + len(image_cols))
    assignment.task = task
    return assignment


def _lease_postgresql(connection, *, worker, where: str, params: list, now: datetime) -> Assignment | None:
    """Lock the first eligible task (skipping rows other transactions hold), lease it, and return the new
    assignment with its task and subjects: one statement, one round trip.

    A task whose lease ran out is reclaimed on the way: its old assignment is marked expired before the new one
    is inserted (the `reclaimed` CTE runs first because `leased` waits for its row count), which keeps the
    one-open-lease constraint true at every step."""
    qn = connection.ops.quote_name
    task_table, assignment_table = qn(Task._meta.db_table), qn(Assignment._meta.db_table)
    expires_at = now + lease_duration()
    sql = f"""
        WITH candidate AS MATERIALIZED (
            {_candidate_sql(connection, where, "FOR UPDATE OF t SKIP LOCKED")}
        ), reclaimed AS (
            UPDATE {assignment_table} old SET state = '{AssignmentState.EXPIRED}'
            FROM candidate WHERE candidate.state = '{TaskState.LEASED}'
                AND old.task_id = candidate.id AND old.state = '{AssignmentState.LEASED}'
            RETURNING old.id
        ), t AS (
            UPDATE {task_table} task
            SET state = '{TaskState.LEASED}', lease_expires_at = %s, updated_at = %s
            FROM candidate WHERE task.id = candidate.id AND (SELECT count(*) FROM reclaimed) >= 0
            RETURNING task.*
        ), a AS (
            INSERT INTO {assignment_table} (task_id, worker_id, state, leased_at, expires_at, idempotency_key)
            SELECT t.id, %s, '{AssignmentState.LEASED}', %s, %s, '' FROM t
            RETURNING *
        )
        SELECT {_select_list(connection)} FROM a JOIN t ON t.id = a.task_id {_subject_joins(connection)}
    """
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(sql, [*_candidate_params(worker, params), expires_at, now, worker.pk, now, expires_at])
        row = cursor.fetchone()
    if row is None:
        return None
    assignment = _assignment_from_row(connection, row)
    assignment.worker = worker
    return assignment


def _lease_portable(connection, *, worker, where: str, params: list, now: datetime) -> Assignment | None:
    """The same lease for databases without SKIP LOCKED (SQLite, which serializes writers anyway)."""
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(_candidate_sql(connection, where, ""), _candidate_params(worker, params))
        row = cursor.fetchone()
    if row is None:
        return None
    task_id, state = row
    if state == TaskState.LEASED:  # reclaiming an expired lease
        Assignment.objects.filter(task_id=task_id, state=AssignmentState.LEASED).update(
            state=AssignmentState.EXPIRED
        )
    expires_at = now + lease_duration()
    Task.objects.filter(pk=task_id).update(
        state=TaskState.LEASED, lease_expires_at=expires_at, updated_at=now
    )
    assignment = Assignment.objects.create(
        task_id=task_id, worker=worker, state=AssignmentState.LEASED, leased_at=now, expires_at=expires_at
    )
    return _assignment_read(connection, assignment.pk)


def task_lease(*, task_id: int, worker, now: datetime) -> Assignment | None:
    """Lease one given open task to `worker` by the very statement `task_lease_next` runs (same stamps, same
    columns read back), for a higher app that made the task for this worker (gold). None if it is not open.
    Call it inside the transaction that created the task."""
    connection = connections[Task.objects.db]
    where, params = f"t.id = %s AND t.state = '{TaskState.OPEN}'", [task_id]
    if connection.features.has_select_for_update_skip_locked:
        return _lease_postgresql(connection, worker=worker, where=where, params=params, now=now)
    return _lease_portable(connection, worker=worker, where=where, params=params, now=now)


def task_lease_next(
    *,
    worker,
    kinds_wanted: list[str] | None = None,
    dataset_id: int | None = None,
    now: datetime | None = None,
) -> Assignment | None:
    """Lease the next eligible task to `worker` in one short transaction, or return None: datasets in turn,
    the highest priority first inside a dataset (see `_candidate_sql`).

    On PostgreSQL the lease is one statement (atomic on its own, so no BEGIN/COMMIT round trips) and
    concurrent callers skip each other's locked rows (SKIP LOCKED) instead of queueing behind them; on SQLite
    writes are serialized and the one-open-lease constraint catches the rare race. The SQL is written by hand
    because building it through the ORM cost more than everything else in the request."""
    connection = connections[Task.objects.db]
    for _attempt in range(3):
        now = now or timezone.now()
        for hook in hooks.lease_hooks:
            hooked = hook(worker, kinds_wanted, dataset_id, now)
            if hooked is not None:
                return hooked
        where, params = _eligible_where(
            connection,
            worker=worker,
            kinds_wanted=kinds_wanted,
            dataset_id=dataset_id,
            now=now,
            apply_filters=True,
        )
        if connection.features.has_select_for_update_skip_locked:
            return _lease_postgresql(connection, worker=worker, where=where, params=params, now=now)
        try:
            with transaction.atomic():
                return _lease_portable(connection, worker=worker, where=where, params=params, now=now)
        except IntegrityError:
            now = None  # someone else leased it first (SQLite); try the next one
            continue
    return None


@dataclass(frozen=True)
class SubmitResult:
    assignment: Assignment
    replayed: bool


def _assignment_read(
    connection, assignment_id: int, worker_id: int | None = None, lock: bool = False
) -> Assignment:
    """The assignment with its task and the task's subjects, in one statement; with `lock`, the task row is
    locked (task rows are always locked first)."""
    qn = connection.ops.quote_name
    sql = (
        f"SELECT {_select_list(connection)} "
        f"FROM {qn(Assignment._meta.db_table)} a JOIN {qn(Task._meta.db_table)} t ON t.id = a.task_id "
        f"{_subject_joins(connection)} WHERE a.id = %s"
    )
    params = [assignment_id]
    if worker_id is not None:
        sql += " AND a.worker_id = %s"
        params.append(worker_id)
    if lock and connection.features.has_select_for_update:
        sql += " FOR UPDATE OF t"
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        raise Assignment.DoesNotExist(f"no assignment {assignment_id}")
    return _assignment_from_row(connection, row)


def assignment_submit(
    *,
    assignment: Assignment | int,
    answer: Any,
    idempotency_key: str,
    worker=None,
    now: datetime | None = None,
) -> SubmitResult:
    """Store the worker's answer exactly once.

    A retry with the same Idempotency-Key returns the stored result and changes nothing; another key on a
    submitted assignment, or any submit after the lease expired, is refused. With `worker`, an assignment that
    is not theirs is `Assignment.DoesNotExist`."""
    now = now or timezone.now()
    if not idempotency_key or len(idempotency_key) > 128:
        raise ValueError("an Idempotency-Key of 1 to 128 characters is required")
    assignment_id = assignment if isinstance(assignment, int) else assignment.pk
    connection = connections[Assignment.objects.db]
    with transaction.atomic():
        current = _assignment_read(
            connection, assignment_id, worker.pk if worker is not None else None, lock=True
        )
        task = current.task
        kind = kinds.get(task.kind)
        stored = False
        if current.state == AssignmentState.LEASED and current.expires_at > now:
            cleaned = kind.clean_answer(task, answer)
            # Every writer of an assignment locks its task first, so with the task row locked the state is
            # settled; the condition still guards against a row read before the lock was granted.
            changed = {
                "state": AssignmentState.SUBMITTED,
                "answer": cleaned,
                "idempotency_key": idempotency_key,
                "submitted_at": now,
            }
            guard = {"state": ("=", AssignmentState.LEASED), "expires_at": (">", now)}
            stored = sqlrows.update(connection, Assignment, current.pk, changed, where=guard) == 1
            if not stored:
                current.refresh_from_db(fields=["state", "answer", "idempotency_key", "submitted_at"])
        if not stored:
            if current.state == AssignmentState.SUBMITTED:
                if current.idempotency_key == idempotency_key:
                    return SubmitResult(current, replayed=True)
                raise AlreadySubmitted("this assignment was already submitted (with another Idempotency-Key)")
            raise LeaseExpired("the lease on this task has expired; fetch a new task")
        for name, value in changed.items():
            setattr(current, name, value)
        # The task row is locked until commit, so its in-memory count is exact: no F() and no re-read needed,
        # and the kind's handler changes the same instance, which is written once.
        task.answers_count += 1
        task.state = TaskState.OPEN
        task.lease_expires_at = None
        if not any(intercept(current) for intercept in hooks.submit_interceptors):
            kind.on_submit(current)
        task.updated_at = now
        written = ("answers_count", "state", "lease_expires_at", "result", "updated_at")
        sqlrows.update(connection, Task, task.pk, {name: getattr(task, name) for name in written})
        return SubmitResult(current, replayed=False)


def assignment_release(*, assignment: Assignment, now: datetime | None = None) -> Assignment:
    """The worker skips the task: the lease ends at once and the task goes back to the queue for others."""
    now = now or timezone.now()
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=assignment.task_id)
        current = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if current.state == AssignmentState.RELEASED:
            return current
        if current.state != AssignmentState.LEASED:
            raise QueueError(f"only a leased assignment can be skipped; this one is {current.state}")
        current.state = AssignmentState.RELEASED
        current.save(update_fields=["state"])
        if task.state == TaskState.LEASED:
            task.state, task.lease_expires_at = TaskState.OPEN, None
            task.save(update_fields=["state", "lease_expires_at", "updated_at"])
            for hook in hooks.unanswered_hooks:
                hook([task.pk])
        return current


def assignment_extend(*, assignment: Assignment, now: datetime | None = None) -> Assignment:
    """The worker is still at the task (drawing a box takes a while): the lease runs for a full lease duration
    from now. Only a live lease can be extended; one that ran out may already belong to someone else."""
    now = now or timezone.now()
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=assignment.task_id)
        current = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if current.state != AssignmentState.LEASED or current.expires_at <= now:
            raise LeaseExpired("the lease on this task has ended; fetch a new task")
        current.expires_at = now + lease_duration()
        current.save(update_fields=["expires_at"])
        task.lease_expires_at = current.expires_at
        task.save(update_fields=["lease_expires_at", "updated_at"])
        current.task = task
        return current


def leases_expire(*, now: datetime | None = None, batch_size: int = 1000) -> int:
    """Return tasks whose lease ran out to the queue. Safe to run concurrently with leasing and submitting:
    rows locked by them are skipped and caught by the next run (or reclaimed on read by task_lease_next)."""
    now = now or timezone.now()
    expired = 0
    while True:
        with transaction.atomic():
            tasks = list(
                Task.objects.filter(state=TaskState.LEASED, lease_expires_at__lt=now)
                .order_by("id")
                .select_for_update(skip_locked=True)
                .values_list("pk", flat=True)[:batch_size]
            )
            if not tasks:
                return expired
            Assignment.objects.filter(
                task_id__in=tasks, state=AssignmentState.LEASED, expires_at__lt=now
            ).update(state=AssignmentState.EXPIRED)
            Task.objects.filter(pk__in=tasks).update(
                state=TaskState.OPEN, lease_expires_at=None, updated_at=now
            )
            for hook in hooks.unanswered_hooks:
                hook(tasks)
            expired += len(tasks)
