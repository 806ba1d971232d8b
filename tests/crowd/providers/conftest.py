"""Fixtures of the provider tests: a dataset with open binary votes, and helpers to drive a bundle session
through its HTTP API the way the bundle page does."""

from __future__ import annotations

import itertools

import pytest
from rest_framework.test import APIClient

from crowd.models import BundleSize
from tests import factories

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
