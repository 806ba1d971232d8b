"""GET /api/v1/me tells a client who its token belongs to, and refuses anonymous callers."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from crowd.services import token_for

pytestmark = pytest.mark.django_db


def test_a_worker_sees_their_name_role_and_worker_id(worker):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(worker)}")
    body = client.get("/api/v1/me").json()
    assert body == {"username": worker.username, "roles": ["workers"], "worker": worker.worker.pk}


def test_an_organizer_has_no_worker_id(organizer):
    client = APIClient()
    client.force_authenticate(organizer)
    body = client.get("/api/v1/me").json()
    assert body["roles"] == ["organizers"] and body["worker"] is None


def test_anonymous_callers_are_refused():
    assert APIClient().get("/api/v1/me").status_code in (401, 403)
