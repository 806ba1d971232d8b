"""Deciding many review items at once: the list a reviewer picks from, one decision over the selection with an
outcome per item (one transaction each), and a retried request that changes nothing twice."""

from __future__ import annotations

import pytest

from annotation.models import Box, BoxState
from review import ambiguous, leasing, scan
from review.models import ItemState, ReviewDecision, ReviewItem
from tests import factories
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

DECIDE = "/api/v1/review/decide"


@pytest.fixture
def alike(dataset, make_box):
    """Six ambiguous items about pending boxes of one class (the crowd could not settle them)."""
    dog = factories.ConceptFactory(name="dog")
    items = []
    for k in range(6):
        image = factories.ImageFactory(dataset=dataset, width=100, height=80)
        box = make_box(image, dog, 1, 1, 20 + k, 20, state=BoxState.PENDING)
        items.append(
            ambiguous.ambiguous_enqueue(
                dataset=dataset, subject={"type": "test.bulk", "id": k}, reason="over its cap", box=box
            )
        )
    return items


def test_the_reviewer_lists_the_items_to_pick_from(alike, reviewer, other_reviewer, dataset):
    held = leasing.review_lease_next(reviewer=other_reviewer)
    client = client_for(reviewer)
    page = client.get("/api/v1/review/items", {"dataset": dataset.pk, "kinds": "ambiguous"}).json()
    listed = [row["id"] for row in page["results"]]
    assert page["count"] == 5 and held.pk not in listed  # another reviewer's lease is not offered
    assert [d["value"] for d in page["results"][0]["decisions"]] == ["accept", "reject"]
    assert client.get("/api/v1/review/items", {"kinds": "nonsense"}).status_code == 400
    assert (
        client_for(factories.user_with_roles("w", ("workers",))).get("/api/v1/review/items").status_code
        == 403
    )


def test_one_decision_on_many_items_reports_each_and_a_retry_changes_nothing(
    alike, reviewer, other_reviewer, dataset, make_box
):
    held = leasing.review_lease_next(reviewer=other_reviewer)  # the first item, held by someone else
    cat = factories.ConceptFactory(name="cat")
    image = factories.ImageFactory(dataset=dataset, width=100, height=80)
    make_box(image, cat, 10, 10, 60, 60)
    make_box(image, cat, 12, 10, 60, 60)
    scan.overlaps_scan(dataset)
    pair = ReviewItem.objects.get(kind="duplicate")  # "accept" is not one of its decisions
    ids = [item.pk for item in alike] + [pair.pk, 999999]
    client = client_for(reviewer)

    response = client.post(
        DECIDE, {"items": ids, "decision": "accept", "reason": "all show a dog"}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    by_item = {row["item"]: row for row in body["results"]}
    assert [row["item"] for row in body["results"]] == ids
    assert body["decided"] == 5 and body["refused"] == 3
    assert by_item[held.pk]["status"] == "refused" and "another reviewer" in by_item[held.pk]["detail"]
    assert by_item[pair.pk]["status"] == "refused" and "accept" in by_item[pair.pk]["detail"]
    assert by_item[999999]["status"] == "refused"
    decided = [item for item in alike if item.pk != held.pk]
    for item in decided:
        assert by_item[item.pk]["status"] == "decided"
        assert Box.objects.get(pk=item.box_a_id).state == BoxState.ACCEPTED
        assert ReviewItem.objects.get(pk=item.pk).state == ItemState.DECIDED
    assert Box.objects.get(pk=held.box_a_id).state == BoxState.PENDING
    pair.refresh_from_db()
    assert pair.state == ItemState.OPEN and pair.leased_to is None  # a refused item is not left leased
    rows = ReviewDecision.objects.filter(item__in=decided)
    assert rows.count() == 5 and {r.reason for r in rows} == {"all show a dog"}

    again = client.post(DECIDE, {"items": ids, "decision": "accept"}, format="json").json()
    assert {row["item"]: row["status"] for row in again["results"] if row["status"] != "refused"} == {
        item.pk: "already_decided" for item in decided
    }
    assert {row["decision"] for row in again["results"] if row["status"] == "already_decided"} == set(
        rows.values_list("pk", flat=True)
    )
    assert ReviewDecision.objects.count() == 5, "the retry took no second decision"
    other = client_for(other_reviewer).post(
        DECIDE, {"items": [decided[0].pk], "decision": "reject"}, format="json"
    )
    assert other.json()["results"][0]["status"] == "refused"


def test_a_bulk_request_names_its_problems(reviewer, db):
    client = client_for(reviewer)
    assert client.post(DECIDE, {"items": [], "decision": "accept"}, format="json").status_code == 400
    too_many = client.post(DECIDE, {"items": list(range(1, 202)), "decision": "accept"}, format="json")
    assert too_many.status_code == 400 and "items" in too_many.json()
    assert client.post(DECIDE, {"items": [1], "decision": "undo"}, format="json").status_code == 400
    assert client.post(DECIDE, {"items": ["x"], "decision": "accept"}, format="json").status_code == 400
