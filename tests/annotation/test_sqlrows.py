"""Hand-written hot-path SQL (annotation.queue.sqlrows): instances built from raw rows equal ORM-loaded ones, guarded
updates change only matching rows, and on PostgreSQL the statements are prepared unless turned off."""

from __future__ import annotations

import pytest
from django.db import connection

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
