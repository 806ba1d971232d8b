"""Every assignment names its task's dataset, on every path that writes one (a lease, a bundle lease, a lease
on the portable path, the queue's import, a row saved through the ORM), and the migration that added the column
fills it for rows already there: one worker's latest answers in one dataset are read on it
(organize/worker_history.py) without walking their answers in every other dataset."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from annotation import queue
from annotation.models import Assignment, AssignmentState
from consensus import binary_vote
from organize.worker_history import worker_history
from tests import factories
from tests.annotation.boxhelpers import image, workers


def _votes(dataset, n: int = 2):
    concept = factories.ConceptFactory()
    return binary_vote.vote_tasks_create(
        dataset=dataset, concept=concept, images=[image(dataset) for _ in range(n)], answers_wanted=1
    )


@pytest.mark.django_db
def test_every_path_that_writes_an_assignment_names_its_tasks_dataset():
    first, second, third = (factories.DatasetFactory() for _ in range(3))
    _votes(first)
    _votes(second, 3)
    (w,) = workers(1)

    single = queue.task_lease_next(worker=w, dataset_id=first.pk)
    bundle = queue.task_lease_many(worker=w, count=3, dataset_id=second.pk)
    assert single.dataset_id == first.pk
    assert [lease.assignment.dataset_id for lease in bundle] == [second.pk] * 3

    (task,) = _votes(third, 1)
    now = timezone.now()
    (imported,) = queue.assignments_import(
        [
            Assignment(
                task=task,
                worker=w,
                state=AssignmentState.SUBMITTED,
                leased_at=now - timedelta(seconds=5),
                expires_at=now + timedelta(minutes=5),
                submitted_at=now,
                answer={"answer": True},
                idempotency_key="imported",
            )
        ]
    )
    saved = Assignment.objects.create(
        task=_votes(third, 1)[0], worker=workers(1, prefix="x")[0], expires_at=now + timedelta(minutes=5)
    )
    assert (imported.dataset_id, saved.dataset_id) == (third.pk, third.pk)
    stored = dict(Assignment.objects.values_list("pk", "dataset_id"))
    assert stored == {a.pk: a.task.dataset_id for a in Assignment.objects.select_related("task")}


@pytest.mark.django_db
def test_a_workers_history_lists_their_latest_answers_in_the_dataset_only():
    here, elsewhere = factories.DatasetFactory(), factories.DatasetFactory()
    _votes(here, 2)
    _votes(elsewhere, 2)
    (w,) = workers(1)
    answered = []
    for dataset in (here, elsewhere, here, elsewhere):
        lease = queue.task_lease_next(worker=w, dataset_id=dataset.pk)
        queue.assignment_submit(assignment=lease, answer={"answer": True}, idempotency_key=f"k{lease.pk}")
        answered.append((dataset.pk, lease.pk))
    recent = worker_history(here, w)["recent"]
    assert [r["assignment"] for r in recent] == [pk for ds, pk in reversed(answered) if ds == here.pk]


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_the_dataset_of_the_assignments_already_there():
    dataset = factories.DatasetFactory()
    _votes(dataset, 2)
    (w,) = workers(1)
    leases = [queue.task_lease_next(worker=w, dataset_id=dataset.pk) for _ in range(2)]
    queue.assignment_submit(assignment=leases[0], answer={"answer": False}, idempotency_key="k")

    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    executor.migrate([("annotation", "0024_worker_stage_tally")])  # the column is dropped
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(leaves)  # and filled again from each row's task

    assert set(Assignment.objects.values_list("dataset_id", flat=True)) == {dataset.pk}
