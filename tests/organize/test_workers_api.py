"""The People list and blocking: the list reads one counter row per worker who answered (a fixed number of
queries, none over the answers); blocking and unblocking a dataset's worker with a reason stops (and resumes)
the queue giving them the dataset's tasks; only the dataset's organizers can, and only for the dataset's
workers."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import AuditEntry, TaskState
from annotation.queue import assignment_submit, assignment_withdraw, task_lease_next
from crowd.models import Invitation, Worker
from gold.models import Block, BlockAction
from tests import factories

pytestmark = pytest.mark.django_db


def answer(worker) -> int:
    lease = task_lease_next(worker=worker)
    assert lease is not None
    assignment_submit(assignment=lease, answer={"answer": True}, idempotency_key=f"k{lease.pk}")
    return lease.pk


@pytest.fixture
def task_and_worker(dataset, worker):
    """A worker who answered one of the dataset's tasks and holds a lease on the next."""
    factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))
    task = factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))
    factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))  # waits for the worker
    member = Worker.objects.get(user=worker)
    answer(member)
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


def test_the_people_list_reads_the_worker_counters_in_a_fixed_number_of_queries(
    api_client, organizer, dataset, django_assert_max_num_queries
):
    for _ in range(8):
        factories.TaskFactory(image=factories.ImageFactory(dataset=dataset), answers_wanted=9)
    workers = [factories.user_with_roles(f"p{i}", ("workers",)).worker for i in range(6)]
    for i, w in enumerate(workers[:5]):
        for _ in range(i + 1):
            taken = answer(w)
    assignment_withdraw(assignment=taken, worker=workers[4])  # the last answer of p4, taken back
    task_lease_next(worker=workers[5])  # a lease, no answer yet
    Block.objects.create(worker=workers[1], dataset=dataset, kind="all", answered=20, correct=5, p_below=0.99)
    BlockAction.objects.create(worker=workers[2], dataset=dataset, blocked=True, reason="r", actor=organizer)
    invited = factories.user_with_roles("invited", ("workers",))
    Invitation.objects.create(
        dataset=dataset, role="workers", token_hash="h", created_by=organizer, accepted_by=invited,
        expires_at=timezone.now(), accepted_at=timezone.now(),
    )  # fmt: skip
    client = api_client(organizer)
    # Role, dataset, worker counters, invited workers, gold blocks, organizers' blocks, the workers' grants
    # (their scope, issue 34), the workers' names: a query per worker would pass it.
    with django_assert_max_num_queries(8), CaptureQueriesContext(connection) as captured:
        rows = client.get(f"/api/v1/datasets/{dataset.pk}/people").data
    assert not [q["sql"] for q in captured.captured_queries if "annotation_assignment" in q["sql"]], (
        "the list groups no answers"
    )
    assert [(r["username"], r["answers"], r["blocked_by"]) for r in rows] == [
        ("p0", 1, None),
        ("p1", 2, "gold"),
        ("p2", 3, "organizer"),
        ("p3", 4, None),
        ("p4", 4, None),
        ("invited", 0, None),
    ], "answers net of the one taken back; a worker who only holds a lease has not answered yet"
    blocked = client.post(url(dataset, workers[5], "block"), {"reason": "holds leases"}, format="json")
    assert blocked.status_code == 200, "a worker with a lease in the dataset can be blocked"
    assert (blocked.data["username"], blocked.data["answers"], blocked.data["blocked"]) == ("p5", 0, True)
