"""Scoped reviewers (issue 34): a reviewer invitation may name the datasets its reviewer reviews; that reviewer
leases, lists, decides, skips and counts review items of those datasets only, and loads only their images. An
invitation naming none keeps the platform-wide queue reviewers had before, and both pages say which it is."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import BoxState, ReviewerGrant
from review import ambiguous
from review.models import ItemState, ReviewItem
from tests import factories
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def invite_reviewer(organizer, dataset, username: str, datasets=()) -> APIClient:
    issued = client_for(organizer).post(
        f"/api/v1/datasets/{dataset.pk}/invitations",
        {"role": "reviewers", "datasets": list(datasets)},
        format="json",
    )
    assert issued.status_code == 201, issued.data
    assert [d["id"] for d in issued.data["datasets"]] == sorted(datasets)
    accepted = APIClient().post(
        "/api/v1/invitations/accept",
        {"token": issued.data["token"], "username": username, "password": "a-long-passphrase-42"},
        format="json",
    )
    assert accepted.status_code == 201, accepted.data
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {accepted.data['api_token']}")
    client.issued = issued.data
    return client


@pytest.fixture
def three_datasets(organizer, other_organizer, make_box):
    """Two datasets of the organizer and one of another organizer, two ambiguous items in each."""
    mine_a = factories.DatasetFactory(organizers=[organizer], name="street-scenes")
    mine_b = factories.DatasetFactory(organizers=[organizer], name="garden-birds")
    theirs = factories.DatasetFactory(organizers=[other_organizer], name="someone-elses")
    dog = factories.ConceptFactory(name="dog")
    items = {}
    for dataset in (mine_a, mine_b, theirs):
        for k in range(2):
            image = factories.ImageFactory(dataset=dataset, width=100, height=80)
            box = make_box(image, dog, 1, 1, 20 + k, 20, state=BoxState.PENDING)
            items.setdefault(dataset.pk, []).append(
                ambiguous.ambiguous_enqueue(
                    dataset=dataset, subject={"type": "test.scope", "id": k}, reason="over its cap", box=box
                )
            )
    return mine_a, mine_b, theirs, items


@pytest.fixture
def other_organizer(db):
    return factories.user_with_roles("omar", ("organizers",))


def leased_datasets(client) -> list[int]:
    seen = []
    while (response := client.get("/api/v1/review/next")).status_code == 200:
        item = ReviewItem.objects.get(pk=response.json()["id"])
        seen.append(item.dataset_id)
        decided = client.post(
            f"/api/v1/review/items/{item.pk}/decide", {"decision": "accept", "reason": "a dog"}, format="json"
        )
        assert decided.status_code == 201, decided.content
    assert response.status_code == 204
    return seen


def test_a_scoped_reviewer_leases_and_decides_only_granted_datasets(organizer, three_datasets):
    mine_a, mine_b, theirs, items = three_datasets
    reviewer = invite_reviewer(organizer, mine_a, "rita", datasets=[mine_a.pk])
    assert list(ReviewerGrant.objects.values_list("user__username", "dataset")) == [("rita", mine_a.pk)]
    listed = reviewer.get("/api/v1/review/items").json()
    assert {row["id"] for row in listed["results"]} == {i.pk for i in items[mine_a.pk]}
    assert reviewer.get("/api/v1/review/next", {"dataset": mine_b.pk}).status_code == 204
    counts = reviewer.get("/api/v1/review/summary").json()["counts"]["ambiguous"]
    assert counts["open"] == 2, "only the granted dataset's items are counted"
    assert reviewer.get("/api/v1/review/summary", {"dataset": mine_b.pk}).status_code == 404

    other = items[mine_b.pk][0]
    decide = reviewer.post(
        f"/api/v1/review/items/{other.pk}/decide", {"decision": "accept", "reason": "x"}, format="json"
    )
    assert decide.status_code == 404
    assert reviewer.post(f"/api/v1/review/items/{other.pk}/release").status_code == 404
    many = reviewer.post(
        "/api/v1/review/decide", {"items": [other.pk], "decision": "accept", "reason": "x"}, format="json"
    ).json()
    assert many["refused"] == 1 and many["results"][0]["detail"] == "no review item has this id"
    assert reviewer.get(f"/api/v1/images/{other.image_id}/file").status_code == 404
    assert reviewer.get(f"/api/v1/images/{items[mine_a.pk][0].image_id}/file").status_code == 200

    assert leased_datasets(reviewer) == [mine_a.pk, mine_a.pk]
    assert ReviewItem.objects.filter(dataset=mine_b, state=ItemState.OPEN).count() == 2
    assert ReviewItem.objects.filter(dataset=theirs, state=ItemState.OPEN).count() == 2


def test_an_unscoped_reviewer_keeps_the_platform_wide_queue(organizer, three_datasets):
    mine_a, mine_b, theirs, items = three_datasets
    reviewer = invite_reviewer(organizer, mine_a, "rex")
    assert not ReviewerGrant.objects.exists()
    assert sorted(leased_datasets(reviewer)) == sorted([mine_a.pk, mine_b.pk, theirs.pk] * 2)


def test_the_pages_say_what_a_reviewer_reviews(organizer, three_datasets, client):
    mine_a, mine_b, _, _ = three_datasets
    issued = client_for(organizer).post(
        f"/api/v1/datasets/{mine_a.pk}/invitations",
        {"role": "reviewers", "datasets": [mine_a.pk, mine_b.pk]},
        format="json",
    )
    page = client.get(f"/invite/{issued.data['token']}/").content.decode()
    assert "You will review items of street-scenes, garden-birds." in page
    invite_reviewer(organizer, mine_a, "rita", datasets=[mine_b.pk])
    invite_reviewer(organizer, mine_a, "rex")
    client.force_login(ReviewerGrant.objects.get().user)
    assert "You review the items of garden-birds." in client.get("/review/").content.decode()
    client.force_login(factories.user_with_roles("ray", ("reviewers",)))
    assert "You review the items of every dataset on this server." in client.get("/review/").content.decode()


def test_a_reviewer_scope_names_only_the_organizers_datasets(organizer, three_datasets):
    mine_a, _, theirs, _ = three_datasets
    refused = client_for(organizer).post(
        f"/api/v1/datasets/{mine_a.pk}/invitations",
        {"role": "reviewers", "datasets": [theirs.pk]},
        format="json",
    )
    assert refused.status_code == 403
