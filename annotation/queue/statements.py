"""The queue's hand-written SQL, in one place: which tasks a worker may lease (built from `LeaseTerms` data),
the lease statement itself, reading an assignment with its task and subjects, and the token lookup every API
request makes. Nothing outside this package writes SQL against the queue's tables.

The SQL is written by hand because building it through the ORM cost more than PostgreSQL spends running it
(bench/queue_throughput.py); `sqlrows` turns its rows back into model instances.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db.models.expressions import RawSQL

from annotation.models import (
    Assignment,
    AssignmentState,
    ConceptExample,
    Dataset,
    DatasetGrant,
    ExampleState,
    Image,
    Task,
    TaskExclusion,
    TaskInstructions,
    TaskState,
)

from . import sqlrows
from .contract import OPEN_POOL, Draw, Lease, LeaseRequest, LeaseTerms


def eligible_where(
    connection, *, worker_id: int, request: LeaseRequest, now: datetime, terms: LeaseTerms, draw: Draw | None
) -> tuple[str, list[Any]]:
    """The WHERE clause (on task alias `t`) of the tasks the worker may lease now, and its parameters.

    Open, or leased with an expired lease; in the open pool, or with a draw among its tasks of its reserved
    pool; of the wanted kinds and dataset (and of the request's datasets, a session's scope); of a dataset the
    worker is granted, when they hold any grant (a worker with none is unscoped: `DatasetGrant`); never a task
    the worker already had or is excluded from; never one of an archived dataset, of an excluded image or of a
    dataset the terms withhold, nor an open-pool task of a (dataset, topic) they withhold, nor one of a kind
    outside the terms' `only_kinds`. This is the one statement of who may take a task: the starved sweep asks it
    too (`reach.tasks_reachable`). The state and open-pool literals are
    written into the SQL, not bound, so PostgreSQL can prove the queue's partial indexes apply. The grant check
    is part of the lease statement, so it costs no round trip: the uncorrelated "holds no grant" runs once per
    statement, the per-dataset lookup (on the grant's unique index) only for a scoped worker."""
    qn = connection.ops.quote_name
    grants = qn(DatasetGrant._meta.db_table)
    conditions = [
        f"(t.state = '{TaskState.OPEN}' OR (t.state = '{TaskState.LEASED}' AND t.lease_expires_at < %s))",
        f"NOT EXISTS (SELECT 1 FROM {qn(Assignment._meta.db_table)} a0 "
        "WHERE a0.task_id = t.id AND a0.worker_id = %s)",
        f"NOT EXISTS (SELECT 1 FROM {qn(TaskExclusion._meta.db_table)} x0 "
        "WHERE x0.task_id = t.id AND x0.worker_id = %s)",
        f"(NOT EXISTS (SELECT 1 FROM {grants} g0 WHERE g0.worker_id = %s) "
        f"OR EXISTS (SELECT 1 FROM {grants} g1 WHERE g1.worker_id = %s AND g1.dataset_id = t.dataset_id))",
        # An archived dataset hands out nothing (organize/dataset_archive.py); its tasks wait, unchanged. Nor
        # does an excluded image (organize/image_exclusion.py): its tasks wait until it is included again. Both
        # are NOT IN lists, each read once per statement into a hash (the image one on its partial index):
        # written as NOT EXISTS, PostgreSQL turned them into anti-joins it estimated to leave one task (an
        # archived or excluded row matches almost none), and sorted every open task instead of walking the
        # queue's index (a lease took 47 ms on 15,000 open tasks; bench/load.py).
        f"t.dataset_id NOT IN (SELECT d0.id FROM {qn(Dataset._meta.db_table)} d0 WHERE d0.archived_at IS NOT NULL)",
        f"COALESCE(t.image_id, 0) NOT IN (SELECT i0.id FROM {qn(Image._meta.db_table)} i0 "
        "WHERE i0.excluded_at IS NOT NULL)",
    ]
    params: list[Any] = [
        sqlrows.prep(Task, "lease_expires_at", now, connection),
        worker_id,
        worker_id,
        worker_id,
        worker_id,
    ]
    if draw is None:
        conditions.append(f"t.pool = '{OPEN_POOL}'")
    else:
        conditions.append("t.pool = %s")
        params.append(draw.pool)
        ids = list(draw.task_ids) or [0]
        conditions.append(f"t.id IN ({', '.join(['%s'] * len(ids))})")
        params.extend(ids)
    if request.kinds_wanted:
        conditions.append(f"t.kind IN ({', '.join(['%s'] * len(request.kinds_wanted))})")
        params.extend(request.kinds_wanted)
    if terms.only_kinds is not None:
        only = sorted(terms.only_kinds) or [""]
        conditions.append(f"t.kind IN ({', '.join(['%s'] * len(only))})")
        params.extend(only)
    if request.dataset_id is not None:
        conditions.append("t.dataset_id = %s")
        params.append(request.dataset_id)
    if request.datasets is not None:
        scope = sorted(request.datasets) or [0]
        conditions.append(f"t.dataset_id IN ({', '.join(['%s'] * len(scope))})")
        params.extend(scope)
    if terms.withheld_datasets:
        datasets = sorted(terms.withheld_datasets)
        conditions.append(f"t.dataset_id NOT IN ({', '.join(['%s'] * len(datasets))})")
        params.extend(datasets)
    if terms.withheld_topics and draw is None:  # a draw is the policy's own choice of what to give
        pairs = sorted(terms.withheld_topics)
        conditions.append("NOT (" + " OR ".join(["(t.dataset_id = %s AND t.topic = %s)"] * len(pairs)) + ")")
        params.extend(value for pair in pairs for value in pair)
    if terms.withheld_topics_everywhere and draw is None:
        topics = sorted(terms.withheld_topics_everywhere)
        withheld = f"t.topic NOT IN ({', '.join(['%s'] * len(topics))})"
        kept = sorted(terms.kept_in)
        if kept:
            withheld = (
                f"({withheld} OR " + " OR ".join(["(t.dataset_id = %s AND t.topic = %s)"] * len(kept)) + ")"
            )
        conditions.append(withheld)
        params.extend(topics)
        params.extend(value for pair in kept for value in pair)
    return " AND ".join(conditions), params


def tasks_where(connection, where: str, params: list[Any]):
    """The tasks matching `where` as a queryset (for reports, the policies' look-ahead and tests)."""
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


def _examples_column(connection) -> str:
    """The leased task's shown examples as one JSON column (null when there are none), in the order
    `annotation.examples.shown_examples` gives them: every lease hands them out, and a subquery in the lease
    statement costs no round trip of its own."""
    table = connection.ops.quote_name(ConceptExample._meta.db_table)
    return (
        "(SELECT json_agg(json_build_array(e.id, e.polarity, e.caption, e.width, e.height) "
        f"ORDER BY e.polarity DESC, e.id) FROM {table} e WHERE e.dataset_id = t.dataset_id "
        f"AND e.concept_id = t.concept_id AND e.kind = t.kind AND e.state = '{ExampleState.SHOWN}')"
    )


def _instructions_column(connection) -> str:
    """The organizer's instructions for the leased task's dataset and stage (its topic, else its kind:
    `annotation.counters.task_stage`), or null: a scalar subquery on their unique (dataset, kind) index."""
    table = connection.ops.quote_name(TaskInstructions._meta.db_table)
    return (
        f"(SELECT ti.text FROM {table} ti WHERE ti.dataset_id = t.dataset_id "
        "AND ti.kind = COALESCE(NULLIF(t.topic, ''), t.kind))"
    )


def _subject_joins(connection) -> str:
    qn = connection.ops.quote_name
    _, _, image, concept = _columns()
    return (
        f"LEFT JOIN {qn(image.model._meta.db_table)} i ON i.id = t.image_id "
        f"LEFT JOIN {qn(concept.model._meta.db_table)} c ON c.id = t.concept_id"
    )


def _candidate_sql(connection, where: str, lock: str, drawn: bool = False) -> str:
    """The first task to lease, taking datasets in turn (the task's SELECT needs `where`'s parameters twice,
    after the worker's id).

    Priorities order tasks inside their own dataset only; across datasets each worker goes round: first the
    datasets after the one their last lease came from (lowest id first), then, wrapping around, all of them.
    So a dataset with work gets its share of every worker's leases whatever priorities other tenants set. Each
    arm walks the (dataset, priority, id) index and stops at its first row; the second arm runs only when the
    first finds nothing, so a lease locks one row.

    A draw names its candidates (a policy's shuffled choice inside one dataset), so it takes the first free one
    in one arm, with no turn to take: looked up by id, it then costs what an ordinary lease's index walk costs
    (tests/security/test_gold_leak_stats.py compares the two)."""
    qn = connection.ops.quote_name
    task_table, assignment_table = qn(Task._meta.db_table), qn(Assignment._meta.db_table)
    if drawn:
        return f"SELECT t.id, t.state FROM {task_table} t WHERE {where} ORDER BY t.id LIMIT 1 {lock}"
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


def _candidate_params(worker_id: int, params: list, drawn: bool = False) -> list:
    return list(params) if drawn else [*params, worker_id, *params]


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


def lease_postgresql(
    connection,
    *,
    worker,
    where: str,
    params: list,
    now: datetime,
    duration: timedelta,
    note: str,
    drawn: bool,
    follows: int | None = None,
) -> Lease | None:
    """Lock the first eligible task (skipping rows other transactions hold), lease it, and return the lease:
    the new assignment with its task and its subjects, and the task's shown examples and instructions: one
    statement, one round trip, whichever pool the task is in.

    A task whose lease ran out is reclaimed on the way: its old assignment is marked expired before the new one
    is inserted (the `reclaimed` CTE runs first because `leased` waits for its row count), which keeps the
    one-open-lease constraint true at every step. With `follows` (the submitted assignment whose answer asked
    for this lease), that assignment's `next_lease_id` is set by the same statement (`linked`)."""
    qn = connection.ops.quote_name
    task_table, assignment_table = qn(Task._meta.db_table), qn(Assignment._meta.db_table)
    expires_at = now + duration
    linked = (
        f", linked AS (UPDATE {assignment_table} prev SET next_lease_id = a.id FROM a WHERE prev.id = %s)"
        if follows is not None
        else ""
    )
    sql = f"""
        WITH candidate AS MATERIALIZED (
            {_candidate_sql(connection, where, "FOR NO KEY UPDATE OF t SKIP LOCKED", drawn)}
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
            INSERT INTO {assignment_table}
                (task_id, dataset_id, worker_id, state, leased_at, expires_at, idempotency_key, lease_note)
            SELECT t.id, t.dataset_id, %s, '{AssignmentState.LEASED}', %s, %s, '', %s FROM t
            RETURNING *
        ){linked}
        SELECT {_select_list(connection)}, {_examples_column(connection)}, {_instructions_column(connection)}
        FROM a JOIN t ON t.id = a.task_id {_subject_joins(connection)}
    """
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(
            sql,
            [*_candidate_params(worker.pk, params, drawn), expires_at, now, worker.pk, now, expires_at, note]
            + ([follows] if follows is not None else []),
        )
        row = cursor.fetchone()
    if row is None:
        return None
    assignment = _assignment_from_row(connection, row)
    assignment.worker = worker
    return Lease(assignment, examples=tuple(tuple(e) for e in row[-2] or ()), instructions=row[-1] or "")


def lease_many_postgresql(
    connection,
    *,
    worker,
    where: str,
    params: list,
    drawn_where: str,
    drawn_params: list,
    slots: Sequence[int],
    count: int,
    now: datetime,
    duration: timedelta,
    note: str,
) -> list[Lease]:
    """Lease up to `count` tasks in one statement: `lease_postgresql` for several rows, with the same
    eligibility (`where`), the same stamps and SKIP LOCKED, and its leases in the order that many single
    leases in a row would take them.

    Ordinary tasks go round the datasets as single leases do: each dataset's best tasks are locked on its
    own (dataset, priority, id) index walk (at most `count` of each), then taken first of every dataset in
    turn (the datasets after the one the worker's last lease came from first), then second of every dataset,
    and so on. Rows locked but not taken are let go when the statement ends. Drawn tasks (`drawn_where`: a
    draw's candidates, see `eligible_where`) take the places `slots` names, the first free candidates by id,
    with the draw's `note`; the assignments are inserted in the lease's order, so their ids say nothing of
    which were drawn. Fewer free tasks than asked: fewer leases; none: an empty list."""
    qn = connection.ops.quote_name
    task_table, assignment_table = qn(Task._meta.db_table), qn(Assignment._meta.db_table)
    dataset_table = qn(Dataset._meta.db_table)
    expires_at = now + duration
    lock = "FOR NO KEY UPDATE OF t SKIP LOCKED"
    last_dataset = (
        f"(SELECT t2.dataset_id FROM {assignment_table} a2 JOIN {task_table} t2 ON t2.id = a2.task_id "
        "WHERE a2.worker_id = %s ORDER BY a2.id DESC LIMIT 1)"
    )
    # A drawn task in place p, the g-th drawn (from 1), follows p - g + 1 ordinary tasks.
    after = [p - g + 1 for g, p in enumerate(slots, 1)]
    sql = f"""
        WITH drawn AS MATERIALIZED (
            SELECT t.id, t.state FROM {task_table} t WHERE {drawn_where} ORDER BY t.id LIMIT %s {lock}
        ), locked AS MATERIALIZED (
            SELECT x.id, x.state, x.dataset_id, x.priority FROM {dataset_table} d CROSS JOIN LATERAL (
                SELECT t.id, t.state, t.dataset_id, t.priority FROM {task_table} t
                WHERE t.dataset_id = d.id AND {where} ORDER BY t.priority DESC, t.id LIMIT %s {lock}
            ) x WHERE d.archived_at IS NULL
        ), ordinary AS (
            SELECT id, state, row_number() OVER (ORDER BY turn, wrapped, dataset_id) AS o FROM (
                SELECT id, state, dataset_id,
                    row_number() OVER (PARTITION BY dataset_id ORDER BY priority DESC, id) AS turn,
                    dataset_id <= COALESCE({last_dataset}, 0) AS wrapped
                FROM locked
            ) ranked
        ), candidate AS MATERIALIZED (
            SELECT id, state, o::float8 AS lease_place, ''::text AS lease_note FROM ordinary
            WHERE o <= %s - (SELECT count(*) FROM drawn)
            UNION ALL
            SELECT id, state, (%s::int[])[g::int] + 0.5, %s::text
            FROM (SELECT id, state, row_number() OVER (ORDER BY id) AS g FROM drawn) numbered
        ), reclaimed AS (
            UPDATE {assignment_table} old SET state = '{AssignmentState.EXPIRED}'
            FROM candidate WHERE candidate.state = '{TaskState.LEASED}'
                AND old.task_id = candidate.id AND old.state = '{AssignmentState.LEASED}'
            RETURNING old.id
        ), t AS (
            UPDATE {task_table} task
            SET state = '{TaskState.LEASED}', lease_expires_at = %s, updated_at = %s
            FROM candidate WHERE task.id = candidate.id AND (SELECT count(*) FROM reclaimed) >= 0
            RETURNING task.*, candidate.lease_place, candidate.lease_note
        ), a AS (
            INSERT INTO {assignment_table}
                (task_id, dataset_id, worker_id, state, leased_at, expires_at, idempotency_key, lease_note)
            SELECT t.id, t.dataset_id, %s, '{AssignmentState.LEASED}', %s, %s, '', t.lease_note FROM t
            ORDER BY t.lease_place
            RETURNING *
        )
        SELECT {_select_list(connection)}, {_examples_column(connection)}, {_instructions_column(connection)}
        FROM a JOIN t ON t.id = a.task_id {_subject_joins(connection)} ORDER BY a.id
    """
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(
            sql,
            [
                *drawn_params,
                len(slots),
                *params,
                count,
                worker.pk,
                count,
                after,
                note,
                expires_at,
                now,
                worker.pk,
                now,
                expires_at,
            ],
        )
        rows = cursor.fetchall()
    leases = []
    for row in rows:
        assignment = _assignment_from_row(connection, row)
        assignment.worker = worker
        leases.append(
            Lease(assignment, examples=tuple(tuple(e) for e in row[-2] or ()), instructions=row[-1] or "")
        )
    return leases


def candidate_look(connection, *, worker, where: str, params: list, drawn: bool) -> None:
    """Run a lease's candidate SELECT without locking or leasing anything: the other side of a lease that may or
    may not take a draw, so both kinds of lease run the same statements."""
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(
            _candidate_sql(connection, where, "", drawn), _candidate_params(worker.pk, params, drawn)
        )
        cursor.fetchone()


def lease_portable(
    connection,
    *,
    worker,
    where: str,
    params: list,
    now: datetime,
    duration: timedelta,
    note: str,
    drawn: bool,
    follows: int | None = None,
) -> Lease | None:
    """The same lease for databases without SKIP LOCKED (SQLite, which serializes writers anyway); the caller
    holds a transaction."""
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(
            _candidate_sql(connection, where, "", drawn), _candidate_params(worker.pk, params, drawn)
        )
        row = cursor.fetchone()
    if row is None:
        return None
    task_id, state = row
    if state == TaskState.LEASED:  # reclaiming an expired lease
        Assignment.objects.filter(task_id=task_id, state=AssignmentState.LEASED).update(
            state=AssignmentState.EXPIRED
        )
    expires_at = now + duration
    Task.objects.filter(pk=task_id).update(
        state=TaskState.LEASED, lease_expires_at=expires_at, updated_at=now
    )
    assignment = Assignment.objects.create(
        task_id=task_id,
        worker=worker,
        state=AssignmentState.LEASED,
        leased_at=now,
        expires_at=expires_at,
        lease_note=note,
    )
    if follows is not None:
        Assignment.objects.filter(pk=follows).update(next_lease_id=assignment.pk)
    assignment, row = _assignment_row(connection, assignment.pk, instructions=True)
    return Lease(assignment, instructions=row[-1] or "")


def assignment_read(
    connection, assignment_id: int, worker_id: int | None = None, lock: bool = False
) -> Assignment:
    """The assignment with its task and the task's subjects, in one statement; with `lock`, the task row is
    locked (task rows are always locked first)."""
    return _assignment_row(connection, assignment_id, worker_id, lock)[0]


def _assignment_row(
    connection,
    assignment_id: int,
    worker_id: int | None = None,
    lock: bool = False,
    instructions: bool = False,
) -> tuple[Assignment, Sequence[Any]]:
    """`assignment_read` and the row it was read from; with `instructions`, the row ends with the task's
    worker instructions, as a lease hands them out."""
    qn = connection.ops.quote_name
    extra = f", {_instructions_column(connection)}" if instructions else ""
    sql = (
        f"SELECT {_select_list(connection)}{extra} "
        f"FROM {qn(Assignment._meta.db_table)} a JOIN {qn(Task._meta.db_table)} t ON t.id = a.task_id "
        f"{_subject_joins(connection)} WHERE a.id = %s"
    )
    params = [assignment_id]
    if worker_id is not None:
        sql += " AND a.worker_id = %s"
        params.append(worker_id)
    if lock and connection.features.has_select_for_update:
        sql += " FOR NO KEY UPDATE OF t"
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        raise Assignment.DoesNotExist(f"no assignment {assignment_id}")
    return _assignment_from_row(connection, row), row


@functools.cache
def _token_columns() -> tuple[sqlrows.Columns, sqlrows.Columns, sqlrows.Columns]:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    worker = Assignment._meta.get_field("worker").related_model
    return sqlrows.Columns(Token, "k"), sqlrows.Columns(get_user_model(), "u"), sqlrows.Columns(worker, "w")


def token_with_worker(connection, key: str):
    """(token, user, worker or None) of an API token, in one statement, or None for an unknown key: every API
    request makes this lookup, and the worker endpoints read `request.user.worker` right after."""
    token_cols, user_cols, worker_cols = _token_columns()
    qn = connection.ops.quote_name
    sql = (
        f"SELECT {token_cols.sql(connection)}, {user_cols.sql(connection)}, {worker_cols.sql(connection)} "
        f"FROM {qn(token_cols.model._meta.db_table)} k "
        f"JOIN {qn(user_cols.model._meta.db_table)} u ON u.id = k.user_id "
        f"LEFT JOIN {qn(worker_cols.model._meta.db_table)} w ON w.user_id = u.id WHERE k.key = %s"
    )
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(sql, [key])
        row = cursor.fetchone()
    if row is None:
        return None
    token = token_cols.build(connection, row)
    user = user_cols.build(connection, row, len(token_cols))
    worker = worker_cols.build(connection, row, len(token_cols) + len(user_cols))
    return token, user, worker


def token_connection():
    from django.db import connections
    from rest_framework.authtoken.models import Token

    return connections[Token.objects.db]
