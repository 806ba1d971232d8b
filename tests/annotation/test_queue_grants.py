"""Dataset grants in the PostgreSQL lease statement (issue 34): a scoped worker is leased tasks of their granted
datasets only, by the one lease statement (no round trip added: the hot-path pins hold for a scoped worker
too), under concurrent leasing as well; a worker without grants keeps taking every dataset's tasks."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from annotation.models import Assignment, DatasetGrant
from annotation.queue import task_lease_next
from consensus.binary_vote import vote_tasks_create
from tests import factories
from tests.annotation.test_hot_path_round_trips import (
    VOTE_NEXT,
    VOTE_SUBMIT_CHAINED,
    VOTE_SUBMIT_CLOSING,
    next_and_submit,
    within,
)
from tests.annotation.test_queue_queries import token_client
from tests.conftest import leased_task

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def votes(dataset, n: int, priority: int = 0):
    concept = factories.ConceptFactory()
    images = [factories.ImageFactory(dataset=dataset) for _ in range(n)]
    tasks = vote_tasks_create(dataset=dataset, concept=concept, images=images, answers_wanted=1)
    if priority:
        from annotation.models import Task

        Task.objects.filter(pk__in=[t.pk for t in tasks]).update(priority=priority)
    return tasks


def test_a_scoped_worker_leases_only_granted_datasets_within_the_pinned_round_trips(worker):
    assert connection.vendor == "postgresql"
    a, b = factories.DatasetFactory(), factories.DatasetFactory()
    votes(a, 2)
    votes(b, 4, priority=9)
    DatasetGrant.objects.create(worker=worker.worker, dataset=a)
    client = token_client(worker)
    leased, submitted, body = next_and_submit(client)
    assert leased_task(body).dataset_id == a.pk
    assert within(leased, VOTE_NEXT), "\n".join(leased)
    assert within(submitted, VOTE_SUBMIT_CLOSING), "\n".join(submitted)
    assert any("annotation_datasetgrant" in s for s in leased), "the grant check is in the lease statement"
    second = client.get("/api/v1/tasks/next").json()
    assert leased_task(second).dataset_id == a.pk
    with CaptureQueriesContext(connection) as chained:
        response = client.post(
            f"/api/v1/assignments/{second['id']}/submit?next=true",
            {"answer": {"answer": True}},
            format="json",
            HTTP_IDEMPOTENCY_KEY="chained",
        )
    assert response.status_code == 201, response.content
    assert response.json()["next"] is None, "dataset b's four tasks are not this worker's"
    sql = [q["sql"] for q in chained.captured_queries]
    assert within(sql, VOTE_SUBMIT_CHAINED), "\n".join(sql)
    assert client.get("/api/v1/tasks/next", {"dataset": b.pk}).status_code == 204


def test_an_unscoped_worker_beside_a_scoped_one_still_takes_every_dataset(worker, other_worker):
    a, b = factories.DatasetFactory(), factories.DatasetFactory()
    votes(a, 1)
    votes(b, 1)
    DatasetGrant.objects.create(worker=worker.worker, dataset=a)
    taken = {task_lease_next(worker=other_worker.worker).task.dataset_id for _ in range(2)}
    assert taken == {a.pk, b.pk}


def test_concurrent_scoped_and_unscoped_workers_never_cross_a_scope():
    a, b = factories.DatasetFactory(), factories.DatasetFactory()
    votes(a, 12)
    votes(b, 12)
    scoped = [factories.user_with_roles(f"s{i}", ("workers",)).worker for i in range(3)]
    free = [factories.user_with_roles(f"f{i}", ("workers",)).worker for i in range(3)]
    for w in scoped:
        DatasetGrant.objects.create(worker=w, dataset=b)
    start = threading.Barrier(len(scoped) + len(free))
    errors: list[BaseException] = []

    def run(w):
        try:
            start.wait()
            for _ in range(8):
                task_lease_next(worker=w)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(w,)) for w in scoped + free]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    crossed = Assignment.objects.filter(worker__in=scoped).exclude(task__dataset=b)
    assert not crossed.exists(), list(crossed.values_list("worker_id", "task__dataset_id"))
    assert Assignment.objects.filter(worker__in=scoped).exists()
    assert Assignment.objects.filter(task__dataset=a).count() == 12, "the unscoped workers took all of a"
    taken = list(Assignment.objects.values_list("task_id", flat=True))
    assert len(taken) == len(set(taken)), "one lease per task"
