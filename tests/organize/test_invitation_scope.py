"""Scoped invitations (issue 34): an invitation names the datasets its worker may work on, the queue leases them
tasks of those datasets only, and the People list shows the scope. An invitation naming none keeps the
behaviour from before scopes: its worker takes tasks of every dataset."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import DatasetGrant
from annotation.queue import available_tasks
from crowd.models import Invitation
from organize.dataset_delete import DatasetInUse, dataset_delete
from tests import factories
from tests.conftest import leased_task

pytestmark = pytest.mark.django_db


def invite(client, dataset, **body):
    return client.post(
        f"/api/v1/datasets/{dataset.pk}/invitations", {"role": "workers", **body}, format="json"
    )


def accept(token: str, username: str) -> APIClient:
    anonymous = APIClient()
    response = anonymous.post(
        "/api/v1/invitations/accept",
        {"token": token, "username": username, "password": "a-long-passphrase-42"},
        format="json",
    )
    assert response.status_code == 201, response.data
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {response.data['api_token']}")
    client.accepted = response.data
    return client


def tasks_in(dataset, n: int, priority: int = 0):
    return [
        factories.TaskFactory(image=factories.ImageFactory(dataset=dataset), priority=priority)
        for _ in range(n)
    ]


def leased_datasets(client, **params) -> list[int]:
    """Lease until the queue says 204, answering each lease, and return the datasets of the tasks leased."""
    seen = []
    for i in range(50):
        response = client.get("/api/v1/tasks/next", params)
        if response.status_code == 204:
            return seen
        assert response.status_code == 200, response.content
        seen.append(leased_task(response.json()).dataset_id)
        submitted = client.post(
            f"/api/v1/assignments/{response.json()['id']}/submit",
            {"answer": {"answer": True}},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"k-{i}",
        )
        assert submitted.status_code == 201, submitted.content
    raise AssertionError("the queue never ran dry")


def test_a_worker_invited_to_dataset_a_never_gets_a_task_of_dataset_b(api_client, organizer, dataset):
    b = factories.DatasetFactory(organizers=[organizer])
    tasks_in(dataset, 3)
    tasks_in(b, 5, priority=9)  # more work and a higher priority: an unscoped worker would take these too
    issued = invite(api_client(organizer), dataset, datasets=[dataset.pk])
    assert issued.status_code == 201, issued.data
    assert issued.data["datasets"] == [{"id": dataset.pk, "name": dataset.name}]
    worker = accept(issued.data["token"], "scoped")
    assert worker.accepted["datasets"] == [dataset.pk]
    assert leased_datasets(worker) == [dataset.pk] * 3
    assert worker.get("/api/v1/tasks/next", {"dataset": b.pk}).status_code == 204, "not even when asked by id"
    user_worker = Invitation.objects.get().accepted_by.worker
    assert not available_tasks(worker=user_worker).exists(), "the reports and the sweep see the scope too"
    assert available_tasks(worker=user_worker, dataset_id=b.pk, terms=None).count() == 0


def test_a_scope_of_two_datasets_takes_both_and_no_third(api_client, organizer, dataset):
    b = factories.DatasetFactory(organizers=[organizer])
    c = factories.DatasetFactory(organizers=[organizer])
    tasks_in(dataset, 2)
    tasks_in(b, 2)
    tasks_in(c, 4)
    issued = invite(api_client(organizer), dataset, datasets=[b.pk, dataset.pk])
    worker = accept(issued.data["token"], "two")
    assert sorted(leased_datasets(worker)) == [dataset.pk] * 2 + [b.pk] * 2


def test_the_next_task_leased_by_a_submit_honours_the_scope(api_client, organizer, dataset):
    b = factories.DatasetFactory(organizers=[organizer])
    tasks_in(dataset, 1)
    tasks_in(b, 3)
    worker = accept(invite(api_client(organizer), dataset, datasets=[dataset.pk]).data["token"], "chained")
    first = worker.get("/api/v1/tasks/next").json()
    response = worker.post(
        f"/api/v1/assignments/{first['id']}/submit?next=true",
        {"answer": {"answer": True}},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k-1",
    )
    assert response.status_code == 201, response.content
    assert response.json().get("next") is None, "dataset b's tasks are not this worker's"


def test_an_invitation_naming_no_dataset_keeps_the_unscoped_behaviour(api_client, organizer, dataset):
    b = factories.DatasetFactory(organizers=[organizer])
    tasks_in(dataset, 1)
    tasks_in(b, 1)
    issued = invite(api_client(organizer), dataset)
    assert issued.data["datasets"] == []
    worker = accept(issued.data["token"], "everywhere")
    assert worker.accepted["datasets"] == []
    assert sorted(leased_datasets(worker)) == sorted([dataset.pk, b.pk])
    assert not DatasetGrant.objects.exists()


def test_a_worker_from_before_scopes_still_takes_every_datasets_tasks(api_client, worker, dataset):
    other = factories.DatasetFactory()
    tasks_in(dataset, 1)
    tasks_in(other, 1)
    assert sorted(leased_datasets(api_client(worker))) == sorted([dataset.pk, other.pk])


def test_a_grant_to_one_worker_scopes_no_one_else(api_client, organizer, dataset, worker):
    b = factories.DatasetFactory(organizers=[organizer])
    tasks_in(b, 1)
    accept(invite(api_client(organizer), dataset, datasets=[dataset.pk]).data["token"], "scoped")
    assert leased_datasets(api_client(worker)) == [b.pk]


def test_scoping_to_another_organizers_dataset_is_refused_and_creates_nothing(
    api_client, organizer, dataset, other_dataset
):
    client = api_client(organizer)
    response = invite(client, dataset, datasets=[dataset.pk, other_dataset.pk])
    assert response.status_code == 403, response.data
    assert str(other_dataset.pk) in str(response.data["detail"])
    unknown = invite(client, dataset, datasets=[other_dataset.pk + 1000])
    assert unknown.status_code == 403, "an unknown id answers like another organizer's"
    assert not Invitation.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"role": "reviewers", "datasets": [0]}, "datasets"),
        ({"role": "workers", "datasets": ["x"]}, "datasets"),
        ({"role": "workers", "datasets": 3}, "datasets"),
    ],
)
def test_a_bad_scope_is_a_400_naming_datasets(api_client, organizer, dataset, body, field):
    response = api_client(organizer).post(f"/api/v1/datasets/{dataset.pk}/invitations", body, format="json")
    assert response.status_code == 400 and field in response.data, response.data
    assert not Invitation.objects.exists()


def test_the_people_list_shows_each_workers_datasets_and_names_only_the_callers(
    api_client, organizer, dataset, other_organizer
):
    b = factories.DatasetFactory(organizers=[organizer])
    shared = factories.DatasetFactory(organizers=[organizer, other_organizer])
    accept(invite(api_client(organizer), shared, datasets=[shared.pk, b.pk]).data["token"], "scoped")
    accept(invite(api_client(organizer), shared).data["token"], "free")
    mine = {r["username"]: r for r in api_client(organizer).get(f"/api/v1/datasets/{shared.pk}/people").data}
    assert mine["scoped"]["scoped"] is True
    assert mine["scoped"]["datasets"] == sorted(
        [{"id": shared.pk, "name": shared.name}, {"id": b.pk, "name": b.name}], key=lambda d: d["id"]
    )
    assert mine["scoped"]["other_datasets"] == 0
    assert (mine["free"]["scoped"], mine["free"]["datasets"]) == (False, [])
    theirs = {
        r["username"]: r for r in api_client(other_organizer).get(f"/api/v1/datasets/{shared.pk}/people").data
    }
    assert [d["id"] for d in theirs["scoped"]["datasets"]] == [shared.pk]
    assert theirs["scoped"]["other_datasets"] == 1, (
        "b is counted, not named, for a co-organizer of shared only"
    )
    listed = api_client(organizer).get(f"/api/v1/datasets/{shared.pk}/invitations").data
    assert sorted(d["id"] for d in listed[-1]["datasets"]) == sorted([shared.pk, b.pk])


def test_a_granted_dataset_cannot_be_deleted_so_its_worker_never_becomes_unscoped(
    api_client, organizer, dataset
):
    b = factories.DatasetFactory(organizers=[organizer])
    accept(invite(api_client(organizer), dataset, datasets=[b.pk]).data["token"], "scoped")
    with pytest.raises(DatasetInUse):
        dataset_delete(b)
    assert DatasetGrant.objects.filter(dataset=b).exists()


def test_a_dataset_named_by_an_open_invitation_elsewhere_cannot_be_deleted(api_client, organizer, dataset):
    b = factories.DatasetFactory(organizers=[organizer])
    invite(api_client(organizer), dataset, datasets=[b.pk])  # not accepted yet
    with pytest.raises(DatasetInUse, match="invitation"):
        dataset_delete(b)
    assert list(Invitation.objects.get().datasets.all()) == [b], "the invitation keeps its scope"


def test_a_worker_granted_a_dataset_is_one_of_its_people_and_can_be_blocked_there(
    api_client, organizer, dataset
):
    b = factories.DatasetFactory(organizers=[organizer])
    accept(invite(api_client(organizer), dataset, datasets=[dataset.pk, b.pk]).data["token"], "scoped")
    client = api_client(organizer)
    rows = client.get(f"/api/v1/datasets/{b.pk}/people").data
    assert [(r["username"], r["answers"]) for r in rows] == [("scoped", 0)]
    worker_id = rows[0]["worker"]
    blocked = client.post(f"/api/v1/datasets/{b.pk}/people/{worker_id}/block", {"reason": "r"}, format="json")
    assert blocked.status_code == 200 and blocked.data["blocked"] is True
    history = client.get(f"/api/v1/datasets/{b.pk}/people/{worker_id}")
    assert history.status_code == 200, "the People list's link to the worker's history opens"
