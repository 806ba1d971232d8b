"""Submit with `next=true`: the answer and the worker's next lease in one request and one transaction (one round
trip per task instead of two). The next lease is the one `tasks/next` would hand out right after the submit, a
retry with the same key hands back the same lease while it is open, and a refused or failed submit leases
nothing."""

from __future__ import annotations

from unittest import mock

import pytest

from annotation import queue
from annotation.models import Assignment, AssignmentState, Task, TaskState
from tests import factories
from tests.annotation.test_queue import lease
from tests.conftest import leased_task

pytestmark = pytest.mark.django_db


def submit_next(client, assignment_id, key="key-1", answer=True, **params):
    query = "&".join(f"{k}={v}" for k, v in {"next": "true", **params}.items())
    return client.post(
        f"/api/v1/assignments/{assignment_id}/submit?{query}",
        {"answer": {"answer": answer}},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def held(worker) -> list[int]:
    return list(
        Assignment.objects.filter(worker=worker.worker, state=AssignmentState.LEASED)
        .order_by("id")
        .values_list("id", flat=True)
    )


def test_the_answer_brings_back_the_next_lease_as_tasks_next_hands_it_out(worker, api_client):
    image = factories.ImageFactory()
    first = factories.TaskFactory(priority=9, image=image)
    low = factories.TaskFactory(priority=0, image=image)
    high = factories.TaskFactory(priority=5, image=image)
    client = api_client(worker)
    assignment = lease(client).json()
    assert leased_task(assignment).pk == first.pk

    response = submit_next(client, assignment["id"])
    assert response.status_code == 201
    body = response.json()
    assert body["id"] == assignment["id"] and body["state"] == "submitted"
    nxt = body["next"]
    assert leased_task(nxt).pk == high.pk, "the highest priority left, as tasks/next would lease it"
    assert nxt["state"] == "leased" and "examples" in nxt["task"]
    assert set(nxt) == set(assignment) and set(nxt["task"]) == set(assignment["task"])
    assert held(worker) == [nxt["id"]]
    assert Task.objects.get(pk=high.pk).state == TaskState.LEASED
    assert Task.objects.get(pk=low.pk).state == TaskState.OPEN
    assert Task.objects.get(pk=first.pk).answers_count == 1


def test_without_next_the_answer_is_as_before_and_leases_nothing(worker, api_client):
    factories.TaskFactory()
    factories.TaskFactory()
    client = api_client(worker)
    assignment_id = lease(client).json()["id"]
    response = client.post(
        f"/api/v1/assignments/{assignment_id}/submit?next=false",
        {"answer": {"answer": True}},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k",
    )
    assert response.status_code == 201
    assert "next" not in response.json()
    assert held(worker) == []


def test_next_is_null_when_no_task_is_left(worker, api_client):
    factories.TaskFactory()
    client = api_client(worker)
    response = submit_next(client, lease(client).json()["id"])
    assert response.status_code == 201
    assert response.json()["next"] is None
    assert held(worker) == []


def test_next_takes_only_the_kinds_asked_for(worker, api_client):
    factories.TaskFactory(kind="binary_vote")
    factories.TaskFactory(kind="binary_vote")
    client = api_client(worker)
    assignment_id = lease(client).json()["id"]
    response = submit_next(client, assignment_id, kinds="box_draw")
    assert response.status_code == 201
    assert response.json()["next"] is None, "no box_draw task exists"
    assert held(worker) == []


def test_a_retry_with_the_same_key_hands_back_the_same_lease_and_leases_nothing_more(worker, api_client):
    for _ in range(3):
        factories.TaskFactory()
    client = api_client(worker)
    assignment_id = lease(client).json()["id"]
    first = submit_next(client, assignment_id, key="same")
    retry = submit_next(client, assignment_id, key="same")
    assert (first.status_code, retry.status_code) == (201, 200)
    assert retry.json()["next"]["id"] == first.json()["next"]["id"]
    assert held(worker) == [first.json()["next"]["id"]]
    assert Assignment.objects.filter(worker=worker.worker).count() == 2


def test_a_retry_after_that_lease_ended_leases_the_one_after(worker, api_client):
    for _ in range(3):
        factories.TaskFactory()
    client = api_client(worker)
    assignment_id = lease(client).json()["id"]
    kept = submit_next(client, assignment_id, key="same").json()["next"]["id"]
    assert client.post(f"/api/v1/assignments/{kept}/release").status_code == 200
    retry = submit_next(client, assignment_id, key="same")
    assert retry.status_code == 200
    fresh = retry.json()["next"]
    assert fresh is not None and fresh["id"] != kept and fresh["state"] == "leased"
    assert held(worker) == [fresh["id"]]
    # And a second retry hands back that new one.
    assert submit_next(client, assignment_id, key="same").json()["next"]["id"] == fresh["id"]


@pytest.mark.parametrize(
    "params, named",
    [({"kinds": "no_such_kind"}, "kinds"), ({"dataset": "x"}, "dataset"), ({"next": "yes"}, "next")],
)
def test_a_bad_lease_parameter_is_a_400_naming_it_and_the_answer_is_not_stored(
    worker, api_client, params, named
):
    factories.TaskFactory()
    factories.TaskFactory()
    client = api_client(worker)
    assignment_id = lease(client).json()["id"]
    response = submit_next(client, assignment_id, **params)
    assert response.status_code == 400
    assert named in response.json()
    assert Assignment.objects.get(pk=assignment_id).state == AssignmentState.LEASED
    assert held(worker) == [assignment_id]


def test_a_refused_submit_leases_nothing(worker, api_client):
    factories.TaskFactory()
    factories.TaskFactory()
    client = api_client(worker)
    assignment_id = lease(client).json()["id"]
    assert submit_next(client, assignment_id, key="one").status_code == 201
    nxt = held(worker)
    response = submit_next(client, assignment_id, key="two")
    assert response.status_code == 409
    assert held(worker) == nxt


def test_the_answer_and_the_next_lease_are_stored_together_or_not_at_all(worker):
    task = factories.TaskFactory()
    factories.TaskFactory()
    assignment = queue.task_lease_next(worker=worker.worker)
    request = queue.LeaseRequest(None, None)
    with mock.patch("annotation.queue.services.task_lease", side_effect=RuntimeError("lease failed")):
        with pytest.raises(RuntimeError):
            queue.assignment_submit(
                assignment=assignment.pk,
                worker=worker.worker,
                answer={"answer": True},
                idempotency_key="k",
                lease_next=request,
            )
    assert Assignment.objects.get(pk=assignment.pk).state == AssignmentState.LEASED
    assert Task.objects.get(pk=task.pk).answers_count == 0
    result = queue.assignment_submit(
        assignment=assignment.pk,
        worker=worker.worker,
        answer={"answer": True},
        idempotency_key="k",
        lease_next=request,
    )
    assert not result.replayed and result.next_lease is not None
    assert Assignment.objects.get(pk=assignment.pk).next_lease_id == result.next_lease.assignment.pk


def test_leasing_the_next_task_on_submit_needs_the_worker(worker):
    factories.TaskFactory()
    assignment = queue.task_lease_next(worker=worker.worker)
    with pytest.raises(ValueError, match="needs the worker"):
        queue.assignment_submit(
            assignment=assignment.pk,
            answer={"answer": True},
            idempotency_key="k",
            lease_next=queue.LeaseRequest(None, None),
        )
    assert Assignment.objects.get(pk=assignment.pk).state == AssignmentState.LEASED
