"""/mturk/task/: framable only by MTurk's hosts; preview leases nothing; an accepted assignment is checked
with MTurk (get_assignment) as far as MTurk answers before submission; the form posts only to MTurk's own
submit URL."""

from __future__ import annotations

import re

import pytest

from annotation.models import Assignment
from crowd.models import Bundle, MturkAssignment, Worker
from tests.crowd.providers.conftest import answer_bundle, session_client
from tests.crowd.providers.mturk_helpers import assignment

pytestmark = pytest.mark.django_db

SANDBOX = "https://workersandbox.mturk.com"


def open_task(client, **params):
    defaults = {"hitId": "HIT1", "assignmentId": "ASSIGN1", "workerId": "WORKER1", "turkSubmitTo": SANDBOX}
    return client.get("/mturk/task/", {**defaults, **params})


def confirm(stubber, assignment_id="ASSIGN1", worker_id="WORKER1", hit_id="HIT1"):
    stubber.add_response(
        "get_assignment",
        {"Assignment": assignment(assignment_id, worker_id, hit_id, status="Submitted")},
        {"AssignmentId": assignment_id},
    )


def policy_of(response) -> dict[str, list[str]]:
    return {
        name: values
        for name, *values in (part.split() for part in response["Content-Security-Policy"].split(";"))
    }


def test_the_page_is_framable_by_mturk_only_and_other_pages_keep_deny(client, published_hit, mturk_client):
    response = open_task(client, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE")
    assert response.status_code == 200
    # MTurk shows production HITs to workers on worker.mturk.com: without it a HIT would not display.
    assert policy_of(response)["frame-ancestors"] == [
        "https://worker.mturk.com",
        "https://www.mturk.com",
        "https://workersandbox.mturk.com",
    ]
    assert "X-Frame-Options" not in response
    login = client.get("/accounts/login/")
    assert login["X-Frame-Options"] == "DENY" and policy_of(login)["frame-ancestors"] == ["'none'"]


def test_the_page_keeps_the_site_policy_and_changes_only_framing_and_where_its_form_posts(
    client, published_hit, mturk_client
):
    site = policy_of(client.get("/accounts/login/"))
    page = policy_of(open_task(client, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE"))
    assert page["script-src"] == ["'self'"] and page["object-src"] == ["'none'"]
    assert {k: v for k, v in page.items() if k not in ("frame-ancestors", "form-action")} == {
        k: v for k, v in site.items() if k not in ("frame-ancestors", "form-action")
    }
    # The form posts to MTurk's externalSubmit (turkSubmitTo), which then sends the worker on inside MTurk.
    assert page["form-action"][0] == "'self'"
    assert {"https://www.mturk.com", "https://workersandbox.mturk.com", "https://worker.mturk.com"} <= set(
        page["form-action"]
    )
    assert "https://evil.example" not in page["form-action"]


def test_preview_shows_instructions_and_leases_nothing(client, published_hit, votes, mturk_client):
    response = open_task(client, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", workerId="")
    assert b"Accept the HIT to start" in response.content and b"data-session" not in response.content
    assert (
        not Assignment.objects.exists()
        and not Bundle.objects.exists()
        and not Worker.objects.filter(source="mturk").exists()
    )


def test_accepted_assignment_is_confirmed_then_answered_and_posts_to_mturk(
    client, published_hit, votes, mturk_client
):
    confirm(mturk_client)
    response = open_task(client)
    assert response.status_code == 200, response.content
    token = re.search(rb'data-session="([^"]+)"', response.content).group(1).decode()
    worker = Worker.objects.get(source="mturk", external_id="WORKER1")
    assert not worker.user.has_usable_password()
    completion = answer_bundle(session_client(token), 3)["completion"]
    bundle = Bundle.objects.get(external_ref="ASSIGN1")
    assert completion["submit_to"] == SANDBOX + "/mturk/externalSubmit"
    assert completion["fields"] == {"assignmentId": "ASSIGN1", "bundle": str(bundle.pk), "answered": "3"}
    assert MturkAssignment.objects.get().submit_to == SANDBOX + "/mturk/externalSubmit"


@pytest.mark.parametrize(
    "forged",
    [
        {"turkSubmitTo": "https://evil.example"},
        {"turkSubmitTo": "https://workersandbox.mturk.com.evil.example"},
        {"hitId": "NOTOURS"},
        {"assignmentId": "<script>"},
        {"workerId": ""},
    ],
)
def test_forged_parameters_are_refused_before_any_lease(client, published_hit, votes, mturk_client, forged):
    # No get_assignment is stubbed: a call to MTurk would fail the test.
    response = open_task(client, **forged)
    assert response.status_code == 400
    assert b"data-session" not in response.content and not Bundle.objects.exists()


@pytest.mark.parametrize(
    "reply",
    [
        {"worker_id": "SOMEONEELSE"},  # the assignment belongs to another worker
        {"hit_id": "HIT2"},  # ... or to another HIT
    ],
)
def test_ids_mturk_does_not_confirm_are_refused(client, published_hit, votes, mturk_client, reply):
    confirm(mturk_client, **reply)
    response = open_task(client)
    assert response.status_code == 400 and b"does not belong" in response.content
    assert not Bundle.objects.exists() and not Worker.objects.filter(source="mturk").exists()


def test_an_accepted_not_yet_submitted_assignment_opens_an_unconfirmed_session(
    client, published_hit, votes, mturk_client
):
    """GetAssignment answers only for Submitted, Approved or Rejected assignments (MTurk's service model has
    no "accepted" status), so a fresh arrival cannot be confirmed: its session opens unconfirmed, and only
    MTurk's own submitted list confirms it later (tests/crowd/providers/test_mturk_sync.py)."""
    mturk_client.add_client_error(
        "get_assignment",
        service_error_code="RequestError",
        service_message="This operation can be called with a status of: Submitted, Approved, Rejected",
        http_status_code=400,
    )
    response = open_task(client)
    assert response.status_code == 200 and b"data-session" in response.content
    row = MturkAssignment.objects.get()
    assert (row.assignment_id, row.mturk_worker_id, row.confirmed) == ("ASSIGN1", "WORKER1", False)


def test_a_reload_with_another_worker_id_is_refused(client, published_hit, votes, mturk_client):
    for _ in range(2):
        mturk_client.add_client_error(
            "get_assignment", service_error_code="RequestError", http_status_code=400
        )
    assert open_task(client).status_code == 200
    response = open_task(client, workerId="SOMEONEELSE")
    assert response.status_code == 400 and b"belongs to another worker" in response.content
    assert Bundle.objects.count() == 1 and not Worker.objects.filter(external_id="SOMEONEELSE").exists()


def test_an_mturk_failure_other_than_a_request_error_refuses_the_page(
    client, published_hit, votes, mturk_client
):
    mturk_client.add_client_error(
        "get_assignment", service_error_code="InternalServerError", http_status_code=500
    )
    response = open_task(client)
    assert response.status_code == 400 and b"could not check this assignment" in response.content
    assert not Bundle.objects.exists()
