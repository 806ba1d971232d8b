"""Changing an accepted worker's scope (issue 34): the organizer adds and removes the datasets they organize
from the worker's grants; the queue follows at the worker's next lease; a lease already held on a dataset
taken out of the scope may still be answered; the last grant cannot be removed (that would make the worker
unscoped); other organizers' grants stay; every change is in the audit trail."""

from __future__ import annotations

import pytest

from annotation.models import AuditEntry, DatasetGrant
from crowd.models import Invitation
from tests import factories
from tests.conftest import leased_task
from tests.organize.test_invitation_scope import accept, invite, leased_datasets, tasks_in

pytestmark = pytest.mark.django_db


def scope_url(dataset, worker_id: int) -> str:
    return f"/api/v1/datasets/{dataset.pk}/people/{worker_id}/scope"


@pytest.fixture
def scoped(api_client, organizer, dataset):
    """A worker invited to `dataset` with the scope (dataset, b), and the organizer's client."""
    b = factories.DatasetFactory(organizers=[organizer], name="garden-birds")
    issued = invite(api_client(organizer), dataset, datasets=[dataset.pk, b.pk])
    worker = accept(issued.data["token"], "walt")
    member = Invitation.objects.get().accepted_by.worker
    return worker, member, b, api_client(organizer)


def granted(member) -> set[int]:
    return set(DatasetGrant.objects.filter(worker=member).values_list("dataset_id", flat=True))


def test_removing_a_dataset_takes_effect_at_the_next_lease_and_a_held_lease_may_finish(dataset, scoped):
    worker, member, b, org = scoped
    tasks_in(dataset, 2)
    tasks_in(b, 3, priority=9)
    held = worker.get("/api/v1/tasks/next", {"dataset": b.pk})
    assert held.status_code == 200 and leased_task(held.json()).dataset_id == b.pk

    changed = org.put(scope_url(dataset, member.pk), {"datasets": [dataset.pk]}, format="json")
    assert changed.status_code == 200, changed.data
    assert changed.data["datasets"] == [{"id": dataset.pk, "name": dataset.name}]
    assert granted(member) == {dataset.pk}

    # The lease taken while b was in the scope is answered and counted.
    submitted = worker.post(
        f"/api/v1/assignments/{held.json()['id']}/submit",
        {"answer": {"answer": True}},
        format="json",
        HTTP_IDEMPOTENCY_KEY="held",
    )
    assert submitted.status_code == 201, submitted.content
    # From the next lease on, only the remaining dataset's tasks come.
    assert leased_datasets(worker) == [dataset.pk] * 2
    assert worker.get("/api/v1/tasks/next", {"dataset": b.pk}).status_code == 204

    (entry,) = AuditEntry.objects.filter(action="worker.scope")
    assert entry.dataset_id == dataset.pk
    assert entry.parameters == {"worker": member.pk, "datasets": [dataset.pk]}
    assert entry.result == {"added": [], "removed": [b.pk]}


def test_adding_a_dataset_lets_the_worker_take_its_tasks(api_client, organizer, dataset):
    c = factories.DatasetFactory(organizers=[organizer])
    issued = invite(api_client(organizer), dataset, datasets=[dataset.pk])
    worker = accept(issued.data["token"], "wren")
    member = Invitation.objects.get().accepted_by.worker
    tasks_in(c, 2)
    assert worker.get("/api/v1/tasks/next").status_code == 204
    changed = api_client(organizer).put(
        scope_url(dataset, member.pk), {"datasets": [dataset.pk, c.pk]}, format="json"
    )
    assert changed.status_code == 200, changed.data
    assert leased_datasets(worker) == [c.pk] * 2


def test_the_last_dataset_cannot_be_removed(dataset, scoped):
    worker, member, b, org = scoped
    refused = org.put(scope_url(dataset, member.pk), {"datasets": []}, format="json")
    assert refused.status_code == 400
    assert "keeps at least one dataset" in str(refused.data["datasets"])
    assert granted(member) == {dataset.pk, b.pk}
    assert not AuditEntry.objects.filter(action="worker.scope").exists()


def test_another_organizers_grants_are_kept_and_their_datasets_refused(api_client, dataset, scoped):
    worker, member, b, org = scoped
    omar = factories.user_with_roles("omar", ("organizers",))
    theirs = factories.DatasetFactory(organizers=[omar])
    DatasetGrant.objects.create(worker=member, dataset=theirs)
    # Omar cannot name olga's dataset, and olga cannot name his.
    assert org.put(scope_url(dataset, member.pk), {"datasets": [theirs.pk]}, format="json").status_code == 403
    assert (
        api_client(omar)
        .put(scope_url(theirs, member.pk), {"datasets": [theirs.pk, dataset.pk]}, format="json")
        .status_code
        == 403
    )
    # Removing all of olga's datasets leaves omar's grant: the worker stays scoped (to omar's dataset).
    changed = org.put(scope_url(dataset, member.pk), {"datasets": []}, format="json")
    assert changed.status_code == 200, changed.data
    assert granted(member) == {theirs.pk}
    assert changed.data["scoped"] is True and changed.data["other_datasets"] == 1


def test_a_worker_the_organizer_did_not_invite_is_not_theirs_to_scope(api_client, organizer, dataset, worker):
    # The worker answered one of the dataset's tasks (so the People list shows them) but was never invited.
    factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))
    from annotation.queue import task_lease_next

    assert task_lease_next(worker=worker.worker) is not None
    refused = api_client(organizer).put(
        scope_url(dataset, worker.worker.pk), {"datasets": [dataset.pk]}, format="json"
    )
    assert refused.status_code == 404
    assert "only a worker you invited" in str(refused.data)
    assert not DatasetGrant.objects.exists()
