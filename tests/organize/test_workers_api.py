"""Blocking and unblocking a dataset's worker with a reason: the queue stops (and resumes) giving them the
dataset's tasks; only the dataset's organizers can, and only for the dataset's workers."""

from __future__ import annotations

import pytest

from annotation.models import AuditEntry, TaskState
from annotation.queue import task_lease_next
from crowd.models import Worker
from gold.models import Block
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def task_and_worker(dataset, worker):
    task = factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))
    factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))  # waits for the worker
    member = Worker.objects.get(user=worker)
    lease = task_lease_next(worker=member)
    assert lease is not None and lease.task_id == task.pk
    return task, member


def url(dataset, worker, verb):
    return f"/api/v1/datasets/{dataset.pk}/people/{worker.pk}/{verb}"


def test_a_blocked_worker_loses_the_lease_and_gets_no_task_until_unblocked(
    api_client, organizer, dataset, task_and_worker
):
    task, member = task_and_worker
    client = api_client(organizer)
    listed = client.get(f"/api/v1/datasets/{dataset.pk}/people").data
    assert [(r["username"], r["blocked"]) for r in listed] == [("worker", False)]
    blocked = client.post(url(dataset, member, "block"), {"reason": "answers at random"}, format="json")
    assert blocked.status_code == 200, blocked.data
    assert (blocked.data["blocked"], blocked.data["blocked_by"], blocked.data["reason"]) == (
        True,
        "organizer",
        "answers at random",
    )
    task.refresh_from_db()
    assert task.state == TaskState.OPEN  # the lease ended
    assert task_lease_next(worker=member) is None
    unblocked = client.post(url(dataset, member, "unblock"), {"reason": "talked to them"}, format="json")
    assert unblocked.data["blocked"] is False
    lease = task_lease_next(worker=member)
    assert lease is not None and lease.task_id != task.pk  # a released task is not given to them again
    assert list(AuditEntry.objects.order_by("id").values_list("action", flat=True)) == [
        "worker.block",
        "worker.unblock",
    ]


def test_unblocking_never_lifts_the_gold_evidences_block(api_client, organizer, dataset, task_and_worker):
    _, member = task_and_worker
    Block.objects.create(worker=member, dataset=dataset, kind="all", answered=20, correct=5, p_below=0.999)
    row = api_client(organizer).post(url(dataset, member, "unblock"), {"reason": "x"}, format="json").data
    assert (row["blocked"], row["blocked_by"]) == (True, "gold")


def test_a_reason_is_required_and_strangers_get_404(
    api_client, organizer, dataset, task_and_worker, other_worker
):
    _, member = task_and_worker
    client = api_client(organizer)
    assert client.post(url(dataset, member, "block"), {"reason": ""}, format="json").status_code == 400
    outsider = Worker.objects.get(user=other_worker)  # never answered in this dataset, never invited
    assert client.post(url(dataset, outsider, "block"), {"reason": "x"}, format="json").status_code == 404
    other = factories.user_with_roles("organizer-b", ("organizers",))
    assert (
        api_client(other).post(url(dataset, member, "block"), {"reason": "x"}, format="json").status_code
        == 404
    )
    assert api_client(other).get(f"/api/v1/datasets/{dataset.pk}/people").status_code == 404
    assert not AuditEntry.objects.exists()
