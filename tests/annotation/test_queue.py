"""The micro-task queue through its HTTP API: leasing, submitting once, expiry, refusals."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import queue
from annotation.models import Assignment, AssignmentState, Task, TaskState
from tests import factories
from tests.conftest import leased_task

pytestmark = pytest.mark.django_db


def lease(client, **params):
    return client.get("/api/v1/tasks/next", params)


def submit(client, assignment_id, answer=True, key="key-1"):
    return client.post(
        f"/api/v1/assignments/{assignment_id}/submit",
        {"answer": {"answer": answer}},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def test_next_task_leases_highest_priority_first_and_shows_no_result(worker, api_client):
    # Priority orders tasks inside their dataset (across datasets, workers go round: tests/security).
    image = factories.ImageFactory()
    low = factories.TaskFactory(priority=0, image=image)
    high = factories.TaskFactory(priority=5, image=image)
    response = lease(api_client(worker))
    assert response.status_code == 200
    body = response.json()
    assert leased_task(body).pk == high.pk and "id" not in body["task"]
    assert body["state"] == "leased"
    assert "result" not in body["task"] and "answers_count" not in body["task"]
    assert body["task"]["image"]["url"] == f"/api/v1/task-images/{body['task']['image']['ref']}"
    assert "id" not in body["task"]["image"]
    assert Task.objects.get(pk=high.pk).state == TaskState.LEASED
    assert Task.objects.get(pk=low.pk).state == TaskState.OPEN


def test_next_task_is_204_when_queue_is_empty(worker, api_client):
    assert lease(api_client(worker)).status_code == 204


def test_next_task_refuses_unknown_kinds_by_name(worker, api_client):
    response = lease(api_client(worker), kinds="binary_vote,no_such_kind")
    assert response.status_code == 400
    assert "no_such_kind" in str(response.json())


def test_a_leased_task_is_not_given_to_another_worker(worker, other_worker, api_client):
    factories.TaskFactory()
    assert lease(api_client(worker)).status_code == 200
    assert lease(api_client(other_worker)).status_code == 204


def test_submit_stores_answer_once_and_retry_with_same_key_changes_nothing(worker, api_client):
    task = factories.TaskFactory()
    client = api_client(worker)
    assignment_id = lease(client).json()["id"]
    first = submit(client, assignment_id, key="abc")
    assert first.status_code == 201
    retry = submit(client, assignment_id, key="abc")
    assert retry.status_code == 200
    assert retry.json() == first.json()
    task.refresh_from_db()
    assert task.answers_count == 1
    assert Assignment.objects.filter(task=task, state=AssignmentState.SUBMITTED).count() == 1


def test_submit_with_another_key_after_submission_is_a_conflict(worker, api_client):
    factories.TaskFactory()
    client = api_client(worker)
    assignment_id = lease(client).json()["id"]
    assert submit(client, assignment_id, key="one").status_code == 201
    response = submit(client, assignment_id, key="two")
    assert response.status_code == 409


def test_submit_without_idempotency_key_is_refused(worker, api_client):
    factories.TaskFactory()
    client = api_client(worker)
    assignment_id = lease(client).json()["id"]
    response = client.post(
        f"/api/v1/assignments/{assignment_id}/submit", {"answer": {"answer": True}}, format="json"
    )
    assert response.status_code == 400
    assert "Idempotency-Key" in str(response.json())


@pytest.mark.parametrize("answer", [None, "yes", 1, {"answer": "yes"}, {"nope": True}, [True]])
def test_malformed_answers_are_refused_and_nothing_is_stored(worker, api_client, answer):
    task = factories.TaskFactory()
    client = api_client(worker)
    assignment_id = lease(client).json()["id"]
    response = client.post(
        f"/api/v1/assignments/{assignment_id}/submit",
        {"answer": answer},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k",
    )
    assert response.status_code == 400
    task.refresh_from_db()
    assert task.answers_count == 0
    assert Assignment.objects.get(pk=assignment_id).state == AssignmentState.LEASED


def test_submit_after_lease_expiry_is_refused(worker, api_client):
    task = factories.TaskFactory()
    client = api_client(worker)
    assignment_id = lease(client).json()["id"]
    Assignment.objects.filter(pk=assignment_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = submit(client, assignment_id)
    assert response.status_code == 409
    assert "expired" in response.json()["detail"]
    task.refresh_from_db()
    assert task.answers_count == 0


def test_submit_by_another_worker_is_refused(worker, other_worker, api_client):
    factories.TaskFactory()
    assignment_id = lease(api_client(worker)).json()["id"]
    response = submit(api_client(other_worker), assignment_id)
    assert response.status_code == 404
    assert Assignment.objects.get(pk=assignment_id).answer is None


def test_expired_lease_returns_task_to_queue_on_read(worker, other_worker, api_client):
    task = factories.TaskFactory()
    assignment_id = lease(api_client(worker)).json()["id"]
    Task.objects.filter(pk=task.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    Assignment.objects.filter(pk=assignment_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = lease(api_client(other_worker))
    assert response.status_code == 200
    assert leased_task(response.json()).pk == task.pk
    assert Assignment.objects.get(pk=assignment_id).state == AssignmentState.EXPIRED


def test_leases_expire_sweep_reopens_tasks(worker, api_client):
    task = factories.TaskFactory()
    assignment_id = lease(api_client(worker)).json()["id"]
    later = timezone.now() + timedelta(hours=1)
    assert queue.leases_expire(now=later) == 1
    task.refresh_from_db()
    assert task.state == TaskState.OPEN and task.lease_expires_at is None
    assert Assignment.objects.get(pk=assignment_id).state == AssignmentState.EXPIRED
    assert queue.leases_expire(now=later) == 0


def test_a_worker_never_gets_the_same_task_twice(worker, api_client):
    factories.TaskFactory(answers_wanted=3)
    client = api_client(worker)
    assignment_id = lease(client).json()["id"]
    assert submit(client, assignment_id).status_code == 201
    assert lease(client).status_code == 204


def test_released_task_goes_to_another_worker_not_back(worker, other_worker, api_client):
    task = factories.TaskFactory()
    client = api_client(worker)
    assignment_id = lease(client).json()["id"]
    response = client.post(f"/api/v1/assignments/{assignment_id}/release")
    assert response.status_code == 200 and response.json()["state"] == "released"
    assert lease(client).status_code == 204
    assert leased_task(lease(api_client(other_worker)).json()).pk == task.pk


def test_excluded_worker_never_leases_the_task(worker, api_client):
    from annotation.models import TaskExclusion

    task = factories.TaskFactory()
    TaskExclusion.objects.create(task=task, worker=worker.worker)
    assert lease(api_client(worker)).status_code == 204


def test_binary_vote_closes_on_fixed_majority(worker, other_worker, api_client, db):
    third = factories.user_with_roles("worker3", ("workers",))
    task = factories.TaskFactory(answers_wanted=3)
    for user, answer in ((worker, True), (other_worker, True)):
        client = api_client(user)
        assert submit(client, lease(client).json()["id"], answer=answer).status_code == 201
    task.refresh_from_db()
    assert task.state == TaskState.DONE
    assert task.result == {"answer": True, "yes": 2, "no": 0, "rule": "majority of 3"}
    assert lease(api_client(third)).status_code == 204


def test_worker_lists_only_their_own_assignments(worker, other_worker, api_client):
    factories.TaskFactory()
    factories.TaskFactory()
    mine = lease(api_client(worker)).json()["id"]
    theirs = lease(api_client(other_worker)).json()["id"]
    listed = api_client(worker).get("/api/v1/assignments/").json()["results"]
    assert [a["id"] for a in listed] == [mine]
    assert api_client(worker).get(f"/api/v1/assignments/{theirs}/").status_code == 404


def test_assignment_list_query_count_does_not_grow_with_rows(
    worker, api_client, django_assert_max_num_queries
):
    client = api_client(worker)
    for _ in range(5):
        factories.TaskFactory()
        submit(client, lease(client).json()["id"])
    with django_assert_max_num_queries(6):
        assert len(client.get("/api/v1/assignments/").json()["results"]) == 5


def test_a_task_closed_while_a_worker_holds_its_lease_ends_that_lease(worker, api_client):
    """A question decided out of band (voided votes recounted, the stuck sweep) closes its task while another
    worker holds a lease on it: the lease ends with it, so that worker's answer is refused as expired and their
    next lease is another task, instead of the closed task coming back on every `tasks/next` (the soak's
    worker that submitted one closed question 247 times)."""
    from django.db import transaction

    image = factories.ImageFactory()
    closed = factories.TaskFactory(priority=5, image=image)
    other = factories.TaskFactory(priority=0, image=image)
    client = api_client(worker)
    held = lease(client).json()
    assert leased_task(held).pk == closed.pk
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=closed.pk)
        task.state = TaskState.DONE
        queue.task_save(task, ["state"])
    closed.refresh_from_db()
    assert closed.state == TaskState.DONE and closed.lease_expires_at is None
    assert Assignment.objects.get(pk=held["id"]).state == AssignmentState.EXPIRED
    refused = submit(client, held["id"])
    assert refused.status_code == 409 and "expired" in refused.json()["detail"], refused.content
    assert leased_task(lease(client).json()).pk == other.pk
