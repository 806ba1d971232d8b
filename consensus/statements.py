"""The vote path's hot SQL: lock the question a task serves (with its dataset and the dataset's settings), store
a vote unless the worker already has one, write a question's changed fields and append its decision row.

Every answer to a yes/no task runs these, so they are written by hand and run as prepared statements through
the queue's row helper (`annotation.queue.sqlrows`): compiled by the ORM on every submit they cost more Python
than PostgreSQL spends running them (bench/load.py prints the CPU per cycle). Elsewhere (SQLite) the ORM runs
the lock, and the writes go through the same helper. A submit passes its `sqlrows.Writes`: the question's
changes and the decision row then go with its other writes, when it sends them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from annotation.models import Dataset
from annotation.queue import sqlrows
from hierarchy.models import Concept

from .models import ConsensusSettings, Question, QuestionDecision, Vote


@functools.cache
def _lock_columns() -> tuple[sqlrows.Columns, sqlrows.Columns, sqlrows.Columns]:
    return (
        sqlrows.Columns(Question, "q"),
        sqlrows.Columns(Dataset, "d"),
        sqlrows.Columns(ConsensusSettings, "s"),
    )


def question_lock(connection, task_id: int) -> Question:
    """The question the task serves, its row locked until commit (only that row: the dataset and its settings
    are read, not locked), with `question.dataset` and `question.dataset.consensus_settings` loaded (the
    latter raising DoesNotExist, without a query, for a dataset on the defaults). Question.DoesNotExist when
    the task serves no question."""
    if connection.vendor != "postgresql":
        return (
            Question.objects.using(connection.alias)
            .select_for_update(of=("self",))
            .select_related("dataset__consensus_settings")
            .get(task_id=task_id)
        )
    question_cols, dataset_cols, settings_cols = _lock_columns()
    qn = connection.ops.quote_name
    sql = (
        f"SELECT {question_cols.sql(connection)}, {dataset_cols.sql(connection)}, {settings_cols.sql(connection)} "
        f"FROM {qn(Question._meta.db_table)} q JOIN {qn(Dataset._meta.db_table)} d ON d.id = q.dataset_id "
        f"LEFT JOIN {qn(ConsensusSettings._meta.db_table)} s ON s.dataset_id = q.dataset_id "
        "WHERE q.task_id = %s FOR NO KEY UPDATE OF q"
    )
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(sql, [task_id])
        row = cursor.fetchone()
    if row is None:
        raise Question.DoesNotExist(f"task {task_id} serves no question")
    question = question_cols.build(connection, row)
    start = len(question_cols)
    dataset = dataset_cols.build(connection, row, start)
    settings = settings_cols.build(connection, row, start + len(dataset_cols))
    question.dataset = dataset
    if settings is None:
        # Known to be missing, as select_related records it: reading it raises DoesNotExist, no query.
        ConsensusSettings.dataset.field.remote_field.set_cached_value(dataset, None)
    else:
        dataset.consensus_settings = settings
    return question


def question_write(
    connection, question: Question, fields: Iterable[str], writes: sqlrows.Writes | None = None
) -> None:
    """UPDATE these fields of the question from the instance (its row is locked by the caller): now, or with
    `writes` (a submit's)."""
    values = {name: getattr(question, name) for name in fields}
    if not values:
        return
    if writes is not None:
        writes.update(Question, question.pk, values)
    else:
        sqlrows.update(connection, Question, question.pk, values)


def vote_insert(connection, vote: Vote) -> bool:
    """Store the vote; False when its worker already has a counted vote on the question (the one-vote
    constraint), with no savepoint on PostgreSQL."""
    return sqlrows.insert(connection, vote, skip_conflict=True)


def decision_insert(
    connection, decision: QuestionDecision, writes: sqlrows.Writes | None = None
) -> QuestionDecision:
    """Append the decision row: now, or with `writes` (a submit's; its id is set once they are sent)."""
    if writes is not None:
        writes.insert(decision)
    else:
        sqlrows.insert(connection, decision)
    return decision


def concept_share_lock(connection, concept_id: int) -> None:
    """Hold the concept's row FOR SHARE until commit: question creators of one concept go on side by side,
    while a calibration rebuild (FOR NO KEY UPDATE of the row) waits for them, or they for it. PostgreSQL only
    (SQLite runs one writer at a time)."""
    if connection.vendor != "postgresql":
        return
    qn = connection.ops.quote_name
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(f"SELECT 1 FROM {qn(Concept._meta.db_table)} WHERE id = %s FOR SHARE", [concept_id])
