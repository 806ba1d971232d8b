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


# --- Writes: the writes a submit causes, sent together where the caller says --------------------------------


def _task_priority(task_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT priority FROM annotation_task WHERE id = %s", [task_id])
        return cursor.fetchone()[0]


@pytest.mark.postgres
def test_held_writes_go_as_one_statement_at_send_with_their_row_counts(db):
    from django.test.utils import CaptureQueriesContext

    from annotation.models import DatasetTally

    task = factories.TaskFactory(priority=1)
    DatasetTally.objects.update_or_create(dataset=task.dataset, defaults={"images": 0})
    done = []
    with CaptureQueriesContext(connection) as captured, transaction.atomic():
        with sqlrows.Writes(connection) as writes:
            writes.update(Task, task.pk, {"priority": 7})
            writes.add(
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
                writes=writes,
                on_done=lambda n, _: done.append(("missing", n)),
            )
            assert done == []  # nothing sent yet
            assert not [q for q in captured.captured_queries if q["sql"].startswith(("WITH", "UPDATE"))]
            held = len(captured.captured_queries)
            writes.send()
        sent = [q for q in captured.captured_queries[held:] if not q["sql"].startswith(("RELEASE", "COMMIT"))]
    assert len(sent) == 1 and sent[0]["sql"].startswith("WITH w0 AS (UPDATE")
    assert done == [("tally", 1), ("missing", 0)]
    assert _task_priority(task.pk) == 7
    assert DatasetTally.objects.get(dataset=task.dataset).images == 3


def test_a_read_before_send_does_not_see_the_held_writes_and_one_after_it_does(db):
    # No read sends them behind the caller's back: a caller whose read needs them sends first (issue 32: held
    # writes sent by an unrelated read locked a tally row in the middle of another pipeline's work).
    task = factories.TaskFactory(priority=1)
    with transaction.atomic(), sqlrows.Writes(connection) as writes:
        writes.update(Task, task.pk, {"priority": 5})
        assert Task.objects.get(pk=task.pk).priority == 1  # an ORM read
        assert _task_priority(task.pk) == 1  # a raw one
        writes.send()
        assert _task_priority(task.pk) == 5
        writes.update(Task, task.pk, {"priority": 6})
        writes.send()
        assert Task.objects.get(pk=task.pk).priority == 6


def test_two_writes_of_one_table_are_never_sent_in_one_statement(db):
    # Parts of one statement do not see each other's changes (and PostgreSQL would apply only one of two
    # updates of one row), so both additions must count.
    from django.test.utils import CaptureQueriesContext

    from annotation.models import DatasetTally

    dataset = factories.DatasetFactory()
    DatasetTally.objects.update_or_create(dataset=dataset, defaults={"images": 0})
    sql = "UPDATE annotation_datasettally SET images = images + %s WHERE dataset_id = %s"
    with transaction.atomic(), sqlrows.Writes(connection) as writes:
        writes.add("annotation_datasettally", sql, [1, dataset.pk])
        writes.add("annotation_datasettally", sql, [2, dataset.pk])
        with CaptureQueriesContext(connection) as captured:
            writes.send()
    assert len(captured.captured_queries) == 2
    assert DatasetTally.objects.get(dataset=dataset).images == 3


def test_a_held_insert_gets_its_primary_key_once_sent_and_a_fallback_runs_after_the_send(worker):
    from annotation import counters
    from annotation.models import UsageCounter

    task = factories.TaskFactory()
    UsageCounter.objects.filter(dataset_id=task.dataset_id).delete()
    other = factories.TaskFactory(dataset=task.dataset)
    assignment = Assignment(
        task=other, worker=worker.worker, state=AssignmentState.LEASED, expires_at=timezone.now()
    )
    with transaction.atomic(), sqlrows.Writes(connection) as writes, counters.held() as counted:
        writes.insert(assignment)
        assert assignment.pk is None
        # No usage row: the counter's UPDATE changes nothing, and the row is created once that is known.
        counters.usage_answers_counted(task, answers=2, worker_time=None)
        counted.flush(writes)
        assert not UsageCounter.objects.filter(
            dataset_id=task.dataset_id, concept_id=task.concept_id
        ).exists()
        writes.send()
        assert assignment.pk is not None
    assert Assignment.objects.get(pk=assignment.pk).task_id == other.pk
    assert UsageCounter.objects.get(dataset_id=task.dataset_id, concept_id=task.concept_id).answers == 2


def test_an_error_in_the_block_drops_the_held_writes(db):
    task = factories.TaskFactory(priority=1)
    with transaction.atomic():
        with pytest.raises(RuntimeError, match="the submit failed"), sqlrows.Writes(connection) as writes:
            writes.update(Task, task.pk, {"priority": 9})
            raise RuntimeError("the submit failed")
        assert _task_priority(task.pk) == 1


def test_writes_left_unsent_at_the_end_of_the_block_are_an_error_not_lost_silently(db):
    task = factories.TaskFactory(priority=1)
    with pytest.raises(RuntimeError, match="never sent"), transaction.atomic():
        with sqlrows.Writes(connection) as writes:
            writes.update(Task, task.pk, {"priority": 9})
    assert _task_priority(task.pk) == 1


def test_a_write_held_from_inside_a_later_savepoint_is_refused(db):
    # Rolling that savepoint back could not undo a write sent after it; such a write is made at once instead.
    task = factories.TaskFactory(priority=1)
    with transaction.atomic(), sqlrows.Writes(connection) as writes:
        with pytest.raises(RuntimeError, match="savepoint"), transaction.atomic():
            writes.update(Task, task.pk, {"priority": 9})
    assert _task_priority(task.pk) == 1


def test_without_writes_a_write_runs_at_once(db):
    task = factories.TaskFactory(priority=1)
    sqlrows.write(
        connection,
        "annotation_task",
        "UPDATE annotation_task SET priority = %s WHERE id = %s",
        [8, task.pk],
        writes=None,
    )
    assert Task.objects.get(pk=task.pk).priority == 8
