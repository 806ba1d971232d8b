"""Resuming and extending leases through the HTTP API (issue 17, worker page bug 5): a reloaded worker page gets
back the tasks its worker still holds, and a worker still at a task extends its lease instead of losing it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, AssignmentState, Task
from tests import factories

from .test_queue import lease, submit

pytestmark = pytest.mark.django_db


def held(client, value="true"):
    return client.get("/api/v1/assignments", {"held": value})


def test_held_lists_only_the_workers_live_leases_oldest_first(worker, other_worker, api_client):
    for _ in range(4):
        factories.TaskFactory()
    client = api_client(worker)
    first, second, answered = (lease(client).json()["id"] for _ in range(3))
    assert submit(client, answered).status_code == 201
    expired = lease(client).json()["id"]
    Assignment.objects.filter(pk=expired).update(expires_at=timezone.now() - timedelta(seconds=1))
    factories.TaskFactory()
    lease(api_client(other_worker))

    response = held(client)
    assert response.status_code == 200
    results = response.json()["results"]
    assert [a["id"] for a in results] == [first, second]
    assert results[0]["task"]["image"]["url"].startswith("/api/v1/task-images/")
    # Without `held`, the list is every assignment of the worker, newest first, as before.
    assert [a["id"] for a in held(client, "false").json()["results"]] == [expired, answered, second, first]


def test_held_refuses_a_value_other_than_true_or_false(worker, api_client):
    response = held(api_client(worker), "yes please")
    assert response.status_code == 400 and "held" in response.json()


def test_extend_gives_a_live_lease_a_full_duration_from_now(worker, api_client, settings):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "LEASE_SECONDS": 60}
    task = factories.TaskFactory()
    client = api_client(worker)
    assignment_id = lease(client).json()["id"]
    Assignment.objects.filter(pk=assignment_id).update(expires_at=timezone.now() + timedelta(seconds=5))

    response = client.post(f"/api/v1/assignments/{assignment_id}/extend")
    assert response.status_code == 200
    renewed = Assignment.objects.get(pk=assignment_id)
    assert timedelta(seconds=55) < renewed.expires_at - timezone.now() <= timedelta(seconds=60)
    assert Task.objects.get(pk=task.pk).lease_expires_at == renewed.expires_at
    assert submit(client, assignment_id).status_code == 201


def test_extend_refuses_an_ended_lease_and_another_workers_assignment(worker, other_worker, api_client):
    factories.TaskFactory()
    factories.TaskFactory()
    client = api_client(worker)
    ended, answered = lease(client).json()["id"], lease(client).json()["id"]
    Assignment.objects.filter(pk=ended).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert submit(client, answered).status_code == 201

    for assignment_id in (ended, answered):
        response = client.post(f"/api/v1/assignments/{assignment_id}/extend")
        assert response.status_code == 409 and "ended" in response.json()["detail"]
    assert Assignment.objects.get(pk=answered).state == AssignmentState.SUBMITTED
    assert api_client(other_worker).post(f"/api/v1/assignments/{ended}/extend").status_code == 404
