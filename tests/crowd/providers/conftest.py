"""Fixtures of the provider tests: a dataset with open binary votes, and helpers to drive a bundle session
through its HTTP API the way the bundle page does."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from crowd.models import BundleSize, HitState, MturkBudget, MturkHit, MturkHitType
from tests import factories
from tests.crowd.providers.mturk_helpers import stubbed_client

_keys = itertools.count()


@pytest.fixture
def votes(dataset):
    """Six open binary-vote tasks in `dataset`, and a bundle size of 3 for that kind."""
    BundleSize.objects.create(dataset=dataset, kind="binary_vote", size=3)
    return factories.TaskFactory.create_batch(6, image__dataset=dataset)


def session_client(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bundle {token}")
    return client


def answer_bundle(client: APIClient, answers: int) -> dict:
    """Lease and answer `answers` items like the bundle page; returns the last response body."""
    body = None
    for _ in range(answers):
        step = client.get("/api/v1/bundle/next")
        assert step.status_code == 200, step.content
        assignment = step.json()["assignment"]
        response = client.post(
            f"/api/v1/bundle/assignments/{assignment['id']}/submit",
            {"answer": {"answer": True}},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"key-{next(_keys)}",
        )
        assert response.status_code == 201, response.content
        body = response.json()
    return body


@pytest.fixture
def mturk_client(monkeypatch):
    """The stubbed client every code path gets from crowd.providers.mturk.client()."""
    client, stubber = stubbed_client()
    monkeypatch.setattr("crowd.providers.mturk.client", lambda: client)
    with stubber:
        yield stubber
    stubber.assert_no_pending_responses()


@pytest.fixture
def hit_type(dataset, settings):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "MTURK_PUBLIC_URL": "https://crowdlabel.example"}
    MturkBudget.objects.create(dataset=dataset, cap=Decimal("100.00"))
    return MturkHitType.objects.create(
        dataset=dataset,
        kind="binary_vote",
        title="Does the image show it?",
        description="Answer yes or no about 3 images.",
        keywords="image, yes/no",
        reward=Decimal("0.50"),
        bonus=Decimal("0.10"),
        min_approval_rate=95,
        locale="us",
    )


@pytest.fixture
def published_hit(hit_type):
    hit_type.hit_type_id = "HITTYPE1"
    hit_type.save()
    return MturkHit.objects.create(
        hit_type=hit_type,
        batch="b",
        request_token="tok-1",
        hit_id="HIT1",
        max_assignments=3,
        estimated_cost=Decimal("1.80"),
        state=HitState.PUBLISHED,
    )
