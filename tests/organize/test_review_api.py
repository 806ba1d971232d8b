"""Review from the organizer's side: queue counts per kind and state, an overlap scan started (audited), and
the recent decisions listed with their undo."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import AuditEntry, Box, BoxState
from config.dbconnection import CommitWatch
from review.models import ScanState
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_overlap_scan_queues_a_duplicate_pair_and_the_counts_show_it(
    api_client, organizer, dataset, django_capture_on_commit_callbacks
):
    dog = factories.ConceptFactory()
    image = factories.ImageFactory(dataset=dataset, width=200, height=200)
    for dx in (0, 1):  # two nearly identical boxes: a duplicate pair
        Box.objects.create(
            image=image, concept=dog, x1=10 + dx, y1=10, x2=100 + dx, y2=100, state=BoxState.ACCEPTED
        )
    Box.objects.filter(image=image).update(created_at=timezone.now() - timedelta(hours=2))  # settled
    client = api_client(organizer)
    before = client.get(f"/api/v1/datasets/{dataset.pk}/review").data["counts"]
    assert before["duplicate"]["open"] == 0 and set(before) >= {"duplicate", "cross_class"}
    # The scan is sent through the outbox once the request commits (eager Celery then runs it in-process);
    # the test's transaction never commits, so the on-commit sends run when this block ends.
    with django_capture_on_commit_callbacks(execute=True) as sent:
        response = client.post(f"/api/v1/datasets/{dataset.pk}/review")
    # One send: the scan (the request's own commit watch, config.dbconnection.CommitWatch, registers its notes too).
    sends = [c for c in sent if not isinstance(getattr(c, "__self__", None), CommitWatch)]
    assert response.status_code == 202 and response.data["scan_queued"] is True and len(sends) == 1
    after = client.get(f"/api/v1/datasets/{dataset.pk}/review").data["counts"]
    assert after["duplicate"]["open"] == 1
    assert ScanState.objects.get(dataset=dataset).last_finished_at is not None
    assert AuditEntry.objects.get().action == "review.overlap_scan"


def test_the_counts_say_how_many_accepted_boxes_await_their_overlap_check_and_a_scan_right_after_one_runs(
    api_client, organizer, dataset, django_capture_on_commit_callbacks
):
    dog = factories.ConceptFactory()
    image = factories.ImageFactory(dataset=dataset, width=200, height=200)
    for dx in (0, 1):  # accepted around the services: no check on commit
        Box.objects.create(
            image=image, concept=dog, x1=10 + dx, y1=10, x2=100 + dx, y2=100, state=BoxState.ACCEPTED
        )
    Box.objects.create(image=image, concept=dog, x1=0, y1=0, x2=5, y2=5, state=BoxState.REJECTED)
    ScanState.objects.create(dataset=dataset, last_finished_at=timezone.now())  # a scan just ran
    client = api_client(organizer)
    assert client.get(f"/api/v1/datasets/{dataset.pk}/review").data["unchecked_boxes"] == 2

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/v1/datasets/{dataset.pk}/review")
    assert response.status_code == 202 and response.data["scan_queued"] is True, (
        "an organizer's request waits for no debounce"
    )
    after = client.get(f"/api/v1/datasets/{dataset.pk}/review").data
    assert after["unchecked_boxes"] == 0 and after["counts"]["duplicate"]["open"] == 1


def test_other_organizers_and_workers_cannot_scan(api_client, dataset, other_organizer, worker):
    assert api_client(other_organizer).post(f"/api/v1/datasets/{dataset.pk}/review").status_code == 404
    assert api_client(worker).post(f"/api/v1/datasets/{dataset.pk}/review").status_code == 403
    assert api_client(worker).get(f"/api/v1/datasets/{dataset.pk}/review").status_code == 403


def decided_pair(dataset, reviewer, decision="duplicate_keep_a"):
    """A duplicate pair queued by a real scan and decided by a reviewer through the review service."""
    from review.decisions import review_decide
    from review.leasing import review_lease_next
    from review.scan import overlaps_scan

    dog = factories.ConceptFactory()
    image = factories.ImageFactory(dataset=dataset, width=200, height=200)
    for dx in (0, 1):
        Box.objects.create(
            image=image, concept=dog, x1=10 + dx, y1=10, x2=100 + dx, y2=100, state=BoxState.ACCEPTED
        )
    overlaps_scan(dataset, now=timezone.now() + timedelta(hours=1))
    item = review_lease_next(reviewer=reviewer, dataset_id=dataset.pk)
    return review_decide(item=item, reviewer=reviewer, decision=decision)


def test_recent_decisions_are_listed_and_an_organizer_undoes_one(
    api_client, organizer, reviewer, dataset, other_dataset, django_assert_max_num_queries
):
    first = decided_pair(dataset, reviewer)
    decided_pair(other_dataset, reviewer)
    client = api_client(organizer)
    with django_assert_max_num_queries(5):
        rows = client.get(f"/api/v1/datasets/{dataset.pk}/review/decisions").json()["results"]
    assert [(r["id"], r["decision"], r["undone"], r["reviewer"], r["undo_refused"]) for r in rows] == [
        (first.pk, "duplicate_keep_a", False, "reviewer", "")
    ]
    assert Box.objects.filter(state=BoxState.REMOVED, image__dataset=dataset).count() == 1
    undo = client.post(
        f"/api/v1/review/decisions/{first.pk}/undo", {"reason": "both are dogs"}, format="json"
    )
    assert undo.status_code == 201, undo.content
    rows = client.get(f"/api/v1/datasets/{dataset.pk}/review/decisions").json()["results"]
    assert [(r["decision"], r["undone"]) for r in rows] == [("undo", False), ("duplicate_keep_a", True)]
    assert rows[0]["item_state"] == "open"
    assert not Box.objects.filter(state=BoxState.REMOVED, image__dataset=dataset).exists()
