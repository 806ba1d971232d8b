"""The health probe: anonymous, JSON, read-only, and free of database access."""

from __future__ import annotations

from django.test import Client

# No `db` fixture here on purpose: pytest-django then refuses any database query, so these tests fail if the
# probe ever starts touching the database.


def test_healthz_answers_ok_as_json_to_anonymous_callers_without_database():
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"status": "ok"}


def test_healthz_answers_head_requests_for_load_balancers():
    assert Client().head("/healthz").status_code == 200


def test_healthz_refuses_writes():
    assert Client().post("/healthz").status_code == 405
