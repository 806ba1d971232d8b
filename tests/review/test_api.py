"""The review API: who may call what, status codes, and bounded queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Box, BoxState
from review import scan
from review.models import ItemState, ReviewDecision, ReviewItem
from tests import factories
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

NEXT = "/api/v1/review/next"


@pytest.fixture
def duplicate(dataset, make_box):
    dog = factories.ConceptFactory(name="dog")
    img = factories.ImageFactory(dataset=dataset, width=100, height=80)
    a = make_box(img, dog, 10, 10, 60, 60)
    b = make_box(img, dog, 12, 10, 60, 60)
    scan.overlaps_scan(dataset)
    return ReviewItem.objects.get(box_a=a, box_b=b)


def decide(client, item_id, decision, key=None, **extra):
    headers = {"Idempotency-Key": key} if key is not None else {}
    return client.post(
        f"/api/v1/review/items/{item_id}/decide",
        {"decision": decision, **extra},
        format="json",
        headers=headers,
    )


def test_a_decision_sent_again_with_its_key_is_answered_with_the_first_and_changes_nothing(
    duplicate, dataset, make_box, reviewer
):
    """A reviewer's client whose decide got a 5xx or no answer after the commit sends it again with the same
    Idempotency-Key: the retry is answered 200 with the recorded decision, not 409, and nothing is applied
    twice; the key on another item is refused, and a repeat without a key is still a 409."""
    client = client_for(reviewer)
    item_id = client.get(NEXT).json()["id"]
    first = decide(client, item_id, "duplicate_keep_a", key="k-1", reason="redrawn")
    assert first.status_code == 201
    again = decide(client, item_id, "duplicate_keep_a", key="k-1", reason="redrawn")
    assert again.status_code == 200
    assert again.json() == first.json()
    assert ReviewDecision.objects.filter(item_id=item_id).count() == 1
    assert Box.objects.get(pk=duplicate.box_b_id).state == BoxState.REMOVED
    assert decide(client, item_id, "duplicate_keep_a").status_code == 409

    dog = duplicate.box_a.concept
    img = factories.ImageFactory(dataset=dataset, width=100, height=80)
    make_box(img, dog, 10, 10, 60, 60)
    make_box(img, dog, 11, 10, 60, 60)
    scan.overlaps_scan(dataset)
    other = client.get(NEXT).json()["id"]
    reused = decide(client, other, "distinct", key="k-1")
    assert reused.status_code == 409 and "Idempotency-Key was used" in reused.json()["detail"]
    assert decide(client, other, "distinct", key="x" * 129).status_code == 400
    assert decide(client, other, "distinct", key="k-2").status_code == 201


def test_reviewer_takes_the_item_with_image_boxes_and_keyboard_choices(duplicate, reviewer):
    response = client_for(reviewer).get(NEXT)
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == duplicate.pk and body["kind"] == "duplicate" and body["state"] == "leased"
    assert body["image"]["width"] == 100 and body["image"]["url"].endswith("/file")
    assert body["box_a"]["concept"]["name"] == "dog" and body["box_b"]["x1"] == 12
    assert [(d["key"], d["value"]) for d in body["decisions"]] == [
        ("1", "distinct"),
        ("2", "duplicate_keep_a"),
        ("3", "duplicate_keep_b"),
    ]
    assert client_for(reviewer).get(body["image"]["url"]).status_code == 200, "reviewers may fetch the image"


def test_next_with_an_empty_queue_is_204_and_bad_params_are_400(reviewer, db):
    client = client_for(reviewer)
    assert client.get(NEXT).status_code == 204
    assert client.get(NEXT, {"kinds": "nonsense"}).status_code == 400
    assert client.get(NEXT, {"skip": "1,x"}).status_code == 400


def test_decide_then_second_reviewer_gets_409(duplicate, reviewer, other_reviewer):
    item_id = client_for(reviewer).get(NEXT).json()["id"]
    assert decide(client_for(other_reviewer), item_id, "distinct").status_code == 409
    response = decide(client_for(reviewer), item_id, "duplicate_keep_a", reason="redrawn")
    assert response.status_code == 201
    assert response.json()["after"]["boxes"][str(duplicate.box_b_id)]["state"] == "removed"
    assert decide(client_for(reviewer), item_id, "duplicate_keep_a").status_code == 409
    assert decide(client_for(reviewer), item_id, "undo").status_code == 400


def test_wrong_decision_for_the_kind_is_400_and_unknown_class_is_400(duplicate, reviewer):
    client = client_for(reviewer)
    item_id = client.get(NEXT).json()["id"]
    assert decide(client, item_id, "remove_a").status_code == 400
    assert decide(client, item_id, "relabel_a", new_concept="n99999999").status_code == 400
    assert ReviewItem.objects.get(pk=item_id).state == ItemState.LEASED


def test_skip_returns_the_item_to_the_queue(duplicate, reviewer, other_reviewer):
    client = client_for(reviewer)
    item_id = client.get(NEXT).json()["id"]
    assert client.post(f"/api/v1/review/items/{item_id}/release").status_code == 200
    assert client.get(NEXT, {"skip": str(item_id)}).status_code == 204
    assert client_for(other_reviewer).get(NEXT).json()["id"] == item_id


def test_only_the_datasets_organizers_may_undo_another_reviewers_decision(
    duplicate, reviewer, other_reviewer, organizer
):
    client = client_for(reviewer)
    decide(client, client.get(NEXT).json()["id"], "duplicate_keep_b")
    decision = ReviewDecision.objects.get()
    url = f"/api/v1/review/decisions/{decision.pk}/undo"

    assert client_for(other_reviewer).post(url, {}, format="json").status_code == 404, "not their decision"
    worker = factories.user_with_roles("wanda", ("workers",))
    assert client_for(worker).post(url, {}, format="json").status_code == 403
    stranger = factories.user_with_roles("other-organizer", ("organizers",))
    assert client_for(stranger).post(url, {}, format="json").status_code == 404
    response = client_for(organizer).post(url, {"reason": "kept the worse box"}, format="json")
    assert response.status_code == 201 and response.json()["undoes"] == decision.pk
    assert Box.objects.get(pk=duplicate.box_a_id).state == BoxState.ACCEPTED
    assert client_for(organizer).post(url, {}, format="json").status_code == 409


def test_workers_and_anonymous_users_cannot_use_the_review_api(duplicate, worker):
    assert client_for(worker).get(NEXT).status_code == 403
    assert decide(client_for(worker), duplicate.pk, "distinct").status_code == 403
    assert client_for(worker).get("/api/v1/review/summary").status_code == 403
    from rest_framework.test import APIClient

    assert APIClient().get(NEXT).status_code in (401, 403)


def test_summary_counts_items_per_kind_and_state(duplicate, reviewer, organizer):
    client_for(reviewer).get(NEXT)
    counts = client_for(organizer).get("/api/v1/review/summary").json()["counts"]
    assert counts["duplicate"] == {"open": 0, "leased": 1, "decided": 0, "dismissed": 0}
    assert counts["cross_class"]["open"] == 0 and set(counts) == {"duplicate", "cross_class", "ambiguous"}


def test_next_item_uses_a_bounded_number_of_queries(dataset, make_box, reviewer):
    dog = factories.ConceptFactory(name="dog")
    for _ in range(20):
        img = factories.ImageFactory(dataset=dataset, width=100, height=100)
        make_box(img, dog, 0, 0, 50, 50)
        make_box(img, dog, 0, 0, 50, 49)
    scan.overlaps_scan(dataset)
    client = client_for(reviewer)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(NEXT).status_code == 200
    assert len(queries) <= 10


def test_the_review_page_needs_a_login_and_renders_for_reviewers(client, reviewer, worker):
    response = client.get("/review/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=/review/")
    client.force_login(reviewer)
    page = client.get("/review/")
    assert page.status_code == 200 and b"review.js" in page.content
    client.force_login(worker)
    assert b"not a reviewer" in client.get("/review/").content
