"""A dataset's progress (counts per stage that move as work is done) and the audit trail of pipeline starts."""

from __future__ import annotations

import pytest

from annotation.models import AuditEntry, BoxJob, BoxJobStatus
from tests import factories

pytestmark = pytest.mark.django_db


def stage(progress, key):
    return next(s for s in progress["stages"] if s["key"] == key)


def test_box_job_progress_moves_when_jobs_finish_and_has_a_recent_rate(api_client, organizer, dataset):
    concept = factories.ConceptFactory()
    images = factories.ImageFactory.create_batch(4, dataset=dataset)
    jobs = [
        BoxJob.objects.create(dataset=dataset, image=i, concept=concept, state={}, max_boxes=3, max_rounds=3)
        for i in images
    ]
    client = api_client(organizer)
    before = stage(client.get(f"/api/v1/datasets/{dataset.pk}/progress").data, "boxes_covered")
    assert (before["done"], before["total"], before["eta_seconds"]) == (0, 4, None)
    BoxJob.objects.filter(pk__in=[jobs[0].pk, jobs[1].pk]).update(status=BoxJobStatus.DONE)
    BoxJob.objects.filter(pk=jobs[2].pk).update(status=BoxJobStatus.REVIEW)
    data = client.get(f"/api/v1/datasets/{dataset.pk}/progress").data
    after = stage(data, "boxes_covered")
    assert (after["done"], after["total"], after["in_review"]) == (3, 4, 1)
    assert after["rate_per_hour"] == pytest.approx(3 * 4)  # three finished in the 15-minute window
    assert after["eta_seconds"] == 300  # one left at 12 per hour
    assert data["images"] == 4 and data["box_jobs_in_review"] == 1


def test_starting_vote_tasks_writes_an_audit_entry_listed_for_the_dataset(api_client, organizer, dataset):
    concept = factories.ConceptFactory(wnid="n02084071")
    factories.ImageFactory.create_batch(3, dataset=dataset)
    client = api_client(organizer)
    body = {"concept": concept.wnid, "answers_wanted": 3}
    assert client.post(f"/api/v1/datasets/{dataset.pk}/vote-tasks", body, format="json").status_code == 201
    entry = AuditEntry.objects.get()
    assert (entry.actor, entry.action, entry.result) == (organizer, "vote_tasks.start", {"created": 3})
    assert entry.parameters["concept"] == "n02084071" and entry.parameters["images"] == "all"
    assert entry.parameters["answers_wanted"] == 3
    listed = client.get(f"/api/v1/datasets/{dataset.pk}/audit").data["results"]
    assert [(row["action"], row["actor"]) for row in listed] == [("vote_tasks.start", "organizer")]


def test_a_refused_start_writes_no_audit_entry(api_client, organizer, dataset):
    client = api_client(organizer)
    response = client.post(
        f"/api/v1/datasets/{dataset.pk}/vote-tasks", {"concept": "n0000nope"}, format="json"
    )
    assert response.status_code == 400
    assert not AuditEntry.objects.exists()


def test_starting_boxing_and_verification_are_audited(api_client, organizer, dataset):
    concept = factories.ConceptFactory(wnid="n02084071")
    images = factories.ImageFactory.create_batch(2, dataset=dataset)
    client = api_client(organizer)
    boxes = client.post(
        f"/api/v1/datasets/{dataset.pk}/box-jobs",
        {"concept": concept.wnid, "images": [images[0].pk], "max_boxes": 4},
        format="json",
    )
    assert boxes.status_code == 201, boxes.data
    verify = client.post(
        f"/api/v1/datasets/{dataset.pk}/verification",
        {"concept": concept.wnid, "calibrate": False},
        format="json",
    )
    assert verify.status_code == 201, verify.data
    entries = {e.action: e for e in AuditEntry.objects.all()}
    assert set(entries) == {"boxes.start", "verification.start"}
    assert (
        entries["boxes.start"].parameters["images"] == 1
        and entries["boxes.start"].parameters["max_boxes"] == 4
    )
    assert entries["boxes.start"].result == {"created": 1, "existing": 0, "where": "images"}
