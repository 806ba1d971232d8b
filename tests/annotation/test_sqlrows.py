"""Hand-written hot-path SQL (annotation.queue.sqlrows): instances built from raw rows equal ORM-loaded ones, guarded
updates change only matching rows, and on PostgreSQL the statements are prepared unless turned off."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.utils import timezone

from annotation import queue
from annotation.models import Assignment, AssignmentState, Task
from annotation.queue import sqlrows
from tests import factories

pytestmark = pytest.mark.django_db


def test_an_instance_built_from_a_raw_row_equals_the_orm_loaded_one():
    task = factories.TaskFactory(payload={"question": "Is it a dog?", "n": [1, 2]}, result={"yes": 1})
    columns = sqlrows.Columns(Task, "t")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns.sql(connection)} FROM annotation_task t WHERE t.id = %s", [task.pk])
        built = columns.build(connection, cursor.fetchone())
    loaded = Task.objects.get(pk=task.pk)
    for field in Task._meta.concrete_fields:
        assert getattr(built, field.attname) == getattr(loaded, field.attname), field.name
    assert built._state.adding is False and built._state.db == "default"


def test_a_guarded_update_changes_only_a_row_that_matches_the_guard(worker):
    factories.TaskFactory()
    assignment = queue.task_lease_next(worker=worker.worker)
    guard = {"state": ("=", AssignmentState.SUBMITTED)}
    assert (
        sqlrows.update(connection, Assignment, assignment.pk, {"answer": {"answer": True}}, where=guard) == 0
    )
    guard = {"state": ("=", AssignmentState.LEASED)}
    assert (
        sqlrows.update(connection, Assignment, assignment.pk, {"answer": {"answer": True}}, where=guard) == 1
    )
    assert Assignment.objects.get(pk=assignment.pk).answer == {"answer": True}
    with pytest.raises(ValueError, match="unsupported operator"):
        sqlrows.update(
            connection, Assignment, assignment.pk, {"answer": None}, where={"state": ("LIKE", "x")}
        )


def _prepared_count() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements")
        return cursor.fetchone()[0]


@pytest.mark.postgres
def test_the_lease_runs_as_a_prepared_statement_on_postgresql(worker):
    factories.TaskFactory()
    before = _prepared_count()
    assert queue.task_lease_next(worker=worker.worker) is not None
    assert _prepared_count() > before


@pytest.mark.postgres
def test_prepared_statements_can_be_turned_off_for_poolers(worker, settings):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "DB_PREPARED_STATEMENTS": False}
    factories.TaskFactory()
    before = _prepared_count()
    assert queue.task_lease_next(worker=worker.worker) is not None
    assert _prepared_count() == before


# --- deferred_writes: the writes a submit causes, sent together --------------------------------------------


def _task_priority(task_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT priority FROM annotation_task WHERE id = %s", [task_id])
        return cursor.fetchone()[0]


@pytest.mark.postgres
def test_held_writes_go_as_one_statement_at_the_end_of_the_block_with_their_row_counts(db):
    from django.test.utils import CaptureQueriesContext

    from annotation.models import DatasetTally

    task = factories.TaskFactory(priority=1)
    DatasetTally.objects.update_or_create(dataset=task.dataset, defaults={"images": 0})
    done = []
    with CaptureQueriesContext(connection) as captured, transaction.atomic():
        with sqlrows.deferred_writes(connection):
            sqlrows.update_later(connection, Task, task.pk, {"priority": 7})
            sqlrows.write(
                connection,
                "annotation_datasettally",
                "UPDATE annotation_datasettally SET images = images + %s WHERE dataset_id = %s",
                [3, task.dataset_id],
                on_done=lambda n, _: done.append(("tally", n)),
            )
            sqlrows.write(
                connection,
                "annotation_datasettally_none",
                "UPDATE annotation_datasettally SET images = images + 1 WHERE dataset_id = %s",
                [-1],  # no such row
                on_done=lambda n, _: done.append(("missing", n)),
            )
            assert done == []  # nothing sent yet
            held = len(captured.captured_queries)
        sent = captured.captured_queries[held:]
    assert len(sent) == 1 and sent[0]["sql"].startswith("WITH w0 AS (UPDATE")
    assert done == [("tally", 1), ("missing", 0)]
    assert _task_priority(task.pk) == 7
    assert DatasetTally.objects.get(dataset=task.dataset).images == 3


@pytest.mark.postgres
def test_a_write_through_djangos_connection_proxy_joins_the_batch_opened_on_the_wrapper(db):
    # The queue opens the block on `connections[alias]`; gold recorded its answer through `django.db.connection`,
    # a proxy object of its own: its writes missed the batch, and a gold submit cost two round trips a real one
    # does not (tests/security/test_gold_probe_stats.py).
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    task = factories.TaskFactory(priority=1)
    wrapper = connections[Task.objects.db]
    assert wrapper is not connection
    with transaction.atomic(), CaptureQueriesContext(wrapper) as captured:
        with sqlrows.deferred_writes(wrapper):
            sqlrows.update_later(connection, Task, task.pk, {"priority": 4})
            assert captured.captured_queries == []  # held, not sent on its own
            sqlrows.deferred_send(connection)
            assert [q["sql"][:9] for q in captured.captured_queries] == ["WITH w0 A"]
    assert _task_priority(task.pk) == 4


@pytest.mark.postgres
def test_a_statement_naming_their_table_sees_the_writes_held_before_it(db):
    task = factories.TaskFactory(priority=1)
    with transaction.atomic(), sqlrows.deferred_writes(connection):
        sqlrows.update_later(connection, Task, task.pk, {"priority": 5})
        assert Task.objects.get(pk=task.pk).priority == 5  # an ORM read
        sqlrows.update_later(connection, Task, task.pk, {"priority": 6})
        assert _task_priority(task.pk) == 6  # a raw one


@pytest.mark.postgres
def test_a_read_of_other_tables_leaves_the_writes_held_until_the_caller_sends_them(db):
    # Sent by an unrelated read, held writes would lock their rows at a point the caller cannot see, in the
    # middle of another pipeline's work (issue 32: a tally row locked by a labeling's read deadlocked).
    from django.test.utils import CaptureQueriesContext

    from annotation.models import DatasetTally

    task = factories.TaskFactory(priority=1)
    with transaction.atomic(), sqlrows.deferred_writes(connection):
        sqlrows.update_later(connection, Task, task.pk, {"priority": 5})
        with CaptureQueriesContext(connection) as captured:
            DatasetTally.objects.filter(dataset_id=task.dataset_id).exists()
        assert [q["sql"] for q in captured.captured_queries if q["sql"].startswith("WITH")] == []
        with CaptureQueriesContext(connection) as captured:
            sqlrows.deferred_send(connection)
        assert len(captured.captured_queries) == 1
        assert captured.captured_queries[0]["sql"].startswith("WITH w0 AS (UPDATE")
    assert _task_priority(task.pk) == 5


@pytest.mark.postgres
def test_two_writes_of_one_table_are_never_sent_in_one_statement(db):
    # Parts of one statement do not see each other's changes (and PostgreSQL would apply only one of two
    # updates of one row), so both additions must count.
    from annotation.models import DatasetTally

    dataset = factories.DatasetFactory()
    DatasetTally.objects.update_or_create(dataset=dataset, defaults={"images": 0})
    sql = "UPDATE annotation_datasettally SET images = images + %s WHERE dataset_id = %s"
    with transaction.atomic(), sqlrows.deferred_writes(connection):
        sqlrows.write(connection, "annotation_datasettally", sql, [1, dataset.pk])
        sqlrows.write(connection, "annotation_datasettally", sql, [2, dataset.pk])
    assert DatasetTally.objects.get(dataset=dataset).images == 3


@pytest.mark.postgres
def test_a_held_insert_gets_its_primary_key_once_sent_and_a_fallback_runs_after_the_send(worker):
    from annotation import counters
    from annotation.models import UsageCounter

    task = factories.TaskFactory()
    UsageCounter.objects.filter(dataset_id=task.dataset_id).delete()
    other = factories.TaskFactory(dataset=task.dataset)
    assignment = Assignment(
        task=other, worker=worker.worker, state=AssignmentState.LEASED, expires_at=timezone.now()
    )
    with transaction.atomic(), sqlrows.deferred_writes(connection):
        sqlrows.insert_later(connection, assignment)
        assert assignment.pk is None
        # No usage row: the counter's UPDATE changes nothing, and the row is created once that is known.
        counters.usage_answers_counted(task, answers=2, worker_time=None)
        sqlrows.deferred_send(connection)
        assert assignment.pk is not None
    assert Assignment.objects.get(pk=assignment.pk).task_id == other.pk
    assert UsageCounter.objects.get(dataset_id=task.dataset_id, concept_id=task.concept_id).answers == 2


@pytest.mark.postgres
def test_an_error_in_the_block_drops_the_held_writes(db):
    task = factories.TaskFactory(priority=1)
    with transaction.atomic():
        with pytest.raises(RuntimeError), sqlrows.deferred_writes(connection):
            sqlrows.update_later(connection, Task, task.pk, {"priority": 9})
            raise RuntimeError("the submit failed")
        assert _task_priority(task.pk) == 1


def test_outside_postgresql_or_outside_a_block_writes_run_at_once(db):
    task = factories.TaskFactory(priority=1)
    with transaction.atomic(), sqlrows.deferred_writes(connection):
        sqlrows.update_later(connection, Task, task.pk, {"priority": 4})
        if connection.vendor != "postgresql":
            assert Task.objects.filter(pk=task.pk).values_list("priority", flat=True).get() == 4
    sqlrows.update_later(connection, Task, task.pk, {"priority": 8})
    assert Task.objects.get(pk=task.pk).priority == 8
