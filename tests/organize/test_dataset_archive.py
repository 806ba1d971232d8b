"""Archiving a dataset (the way out for one that was worked on): it leaves the active list for "Archived", its
tasks and review items stop being handed out, its labels and exports stay; restoring brings the work back.
Both audited, both idempotent; another organizer's dataset is a 404."""

from __future__ import annotations

import pytest

from annotation.models import AuditEntry, Box, BoxState, Dataset
from consensus import binary_vote
from review import scan
from tests import factories
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def test_an_archived_dataset_hands_out_nothing_keeps_its_data_and_comes_back_restored(
    organizer, dataset, worker
):
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    images = factories.ImageFactory.create_batch(3, dataset=dataset)
    binary_vote.vote_tasks_create(dataset=dataset, concept=dog, images=images[:2], answers_wanted=1)
    for x1 in (10, 12):
        Box.objects.create(image=images[2], concept=dog, x1=x1, y1=10, x2=60, y2=60, state=BoxState.ACCEPTED)
    scan.overlaps_scan(dataset)
    reviewer = factories.user_with_roles("rita", ("reviewers",))
    client = client_for(organizer)

    reply = client.post(f"/api/v1/datasets/{dataset.pk}/archive")
    assert reply.status_code == 200, reply.content
    archived_at = reply.json()["archived_at"]
    assert archived_at and Dataset.objects.get(pk=dataset.pk).archived_at is not None
    assert (
        client.post(f"/api/v1/datasets/{dataset.pk}/archive").json()["archived_at"] == archived_at
    )  # idempotent
    assert client_for(worker).get("/api/v1/tasks/next").status_code == 204
    assert client_for(reviewer).get("/api/v1/review/next").status_code == 204
    # Its data stays and its pages and API still answer.
    assert dataset.images.count() == 3 and dataset.tasks.count() == 2
    listed = client.get("/api/v1/datasets/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert next(r for r in rows if r["id"] == dataset.pk)["archived_at"] == archived_at
    assert client.get(f"/api/v1/datasets/{dataset.pk}/exports/").status_code == 200

    reply = client.post(f"/api/v1/datasets/{dataset.pk}/restore")
    assert reply.status_code == 200 and reply.json()["archived_at"] is None
    assert client_for(worker).get("/api/v1/tasks/next").status_code == 200
    assert client_for(reviewer).get("/api/v1/review/next").status_code == 200
    actions = list(AuditEntry.objects.filter(dataset=dataset).order_by("id").values_list("action", flat=True))
    assert actions == ["dataset.archive", "dataset.restore"]


def test_the_datasets_page_lists_archived_datasets_apart(organizer, dataset, client):
    kept = factories.DatasetFactory(organizers=[organizer], name="kept-one")
    client_for(organizer).post(f"/api/v1/datasets/{dataset.pk}/archive")
    client.force_login(organizer)
    html = client.get("/organize/").content.decode()
    active, _, archived = html.partition("<h2>Archived</h2>")
    assert kept.name in active and dataset.name not in active
    assert dataset.name in archived and "Restore" in archived
    detail = client.get(f"/organize/datasets/{dataset.pk}/").content.decode()
    assert 'id="archived-note"' in detail


def test_only_the_datasets_organizers_archive_it(dataset, worker):
    stranger = factories.user_with_roles("other-organizer", ("organizers",))
    assert client_for(stranger).post(f"/api/v1/datasets/{dataset.pk}/archive").status_code == 404
    assert client_for(worker).post(f"/api/v1/datasets/{dataset.pk}/archive").status_code == 403
    assert Dataset.objects.get(pk=dataset.pk).archived_at is None
