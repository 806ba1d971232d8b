"""A reviewer takes back their own mis-keyed decision (issue 17): only their latest one, only for a few minutes,
and the item comes straight back to them; organizers keep their unlimited undo."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Box, BoxState
from review import scan
from review.models import Decision, ItemState, ReviewDecision, ReviewItem
from tests import factories
from tests.conftest import client_for

from .test_api import NEXT, decide

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_duplicates(dataset, make_box):
    dog = factories.ConceptFactory(name="dog")
    items = []
    for _ in range(2):
        img = factories.ImageFactory(dataset=dataset, width=100, height=80)
        make_box(img, dog, 10, 10, 60, 60)
        make_box(img, dog, 12, 10, 60, 60)
    scan.overlaps_scan(dataset)
    items = list(ReviewItem.objects.order_by("id"))
    assert len(items) == 2
    return items


def undo(client, decision_id):
    return client.post(f"/api/v1/review/decisions/{decision_id}/undo", {}, format="json")


def test_a_reviewer_takes_back_their_latest_decision_and_gets_the_item_back(two_duplicates, reviewer):
    client = client_for(reviewer)
    first = client.get(NEXT).json()["id"]
    saved = decide(client, first, "duplicate_keep_b").json()
    second = client.get(NEXT).json()["id"]
    assert second != first

    response = undo(client, saved["id"])
    assert response.status_code == 201 and response.json()["decision"] == Decision.UNDO
    item = ReviewItem.objects.get(pk=first)
    assert item.state == ItemState.LEASED and item.leased_to == reviewer
    assert Box.objects.get(pk=item.box_a_id).state == BoxState.ACCEPTED, "the removed box is back"
    # The page asks for the item back, passing over the one on screen; then decides it again.
    assert client.get(NEXT, {"skip": str(second)}).json()["id"] == first
    assert decide(client, first, "distinct").status_code == 201
    assert client.get(NEXT).json()["id"] == second, "the item on screen before is still held"


def test_only_the_latest_decision_and_only_while_it_is_fresh(two_duplicates, reviewer, settings):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "REVIEW_UNDO_SECONDS": 60}
    client = client_for(reviewer)
    older = decide(client, client.get(NEXT).json()["id"], "distinct").json()["id"]
    latest = decide(client, client.get(NEXT).json()["id"], "distinct").json()["id"]

    response = undo(client, older)
    assert response.status_code == 409 and "latest" in response.json()["detail"]
    ReviewDecision.objects.filter(pk=latest).update(created_at=timezone.now() - timedelta(seconds=61))
    response = undo(client, latest)
    assert response.status_code == 409 and "60 seconds" in response.json()["detail"]
    assert not ReviewDecision.objects.filter(decision=Decision.UNDO).exists()


def test_an_organizer_still_undoes_an_old_decision_and_the_item_reopens_for_anyone(
    two_duplicates, reviewer, organizer, settings
):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "REVIEW_UNDO_SECONDS": 60}
    client = client_for(reviewer)
    item_id = client.get(NEXT).json()["id"]
    decision = decide(client, item_id, "distinct").json()["id"]
    ReviewDecision.objects.filter(pk=decision).update(created_at=timezone.now() - timedelta(days=3))
    assert undo(client_for(organizer), decision).status_code == 201
    item = ReviewItem.objects.get(pk=item_id)
    assert item.state == ItemState.OPEN and item.leased_to is None
