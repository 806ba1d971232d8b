"""Small leaks between tenants: the review summary counts only the caller's datasets (reviewers, who work the
platform-wide queue, see all)."""

from __future__ import annotations

import pytest

from review.models import ReviewItem, ReviewKind
from tests import factories
from tests.conftest import client_for


def ambiguous_items(dataset, n: int) -> None:
    image = factories.ImageFactory(dataset=dataset)
    for k in range(n):
        ReviewItem.objects.create(
            kind=ReviewKind.AMBIGUOUS,
            dataset=dataset,
            image=image,
            subject={"k": k},
            subject_key=f"{image.pk}-{k}",
        )


@pytest.fixture
def two_tenants(organizer, dataset):
    stranger = factories.user_with_roles("stranger", ("organizers",))
    theirs = factories.DatasetFactory(organizers=[stranger])
    ambiguous_items(dataset, 2)
    ambiguous_items(theirs, 3)
    return stranger, theirs


def open_ambiguous(response) -> int:
    return response.json()["counts"]["ambiguous"]["open"]


def test_an_organizer_cannot_read_another_organizers_review_counts(organizer, dataset, two_tenants):
    stranger, theirs = two_tenants
    response = client_for(stranger).get("/api/v1/review/summary/", {"dataset": dataset.pk})
    assert response.status_code == 404
    assert open_ambiguous(client_for(stranger).get("/api/v1/review/summary/")) == 3
    assert open_ambiguous(client_for(organizer).get("/api/v1/review/summary/", {"dataset": dataset.pk})) == 2


def test_a_reviewer_sees_the_whole_queue_and_any_one_dataset(db, dataset, two_tenants):
    _, theirs = two_tenants
    reviewer = factories.user_with_roles("rita", ("reviewers",))
    assert open_ambiguous(client_for(reviewer).get("/api/v1/review/summary/")) == 5
    assert open_ambiguous(client_for(reviewer).get("/api/v1/review/summary/", {"dataset": theirs.pk})) == 3
