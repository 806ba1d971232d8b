"""sync_hits: submitted assignments are listed page by page, matched to their bundles and settled by the gold
app's decisions (approve; reject only when gold rejects; bonus with a UniqueRequestToken); settled ones are
never settled or paid again, also by a second run at the same time."""

from __future__ import annotations

import json
import threading
from io import StringIO

import pytest
from django.core.management import call_command

from annotation.models import Assignment
from crowd.models import MturkAssignment, MturkAssignmentStatus
from crowd.providers import base, mturk, mturk_sync
from gold.models import PaymentDecision
from tests.crowd.providers.mturk_helpers import assignment, stubbed_client
from tests.threads import in_thread

SANDBOX = "https://workersandbox.mturk.com"
LIST = {"HITId": "HIT1", "MaxResults": 100, "AssignmentStatuses": ["Submitted"]}


def finished_bundle(hit, assignment_id="ASSIGN1", worker_id="WORKER1"):
    """An MTurk session whose worker answered the whole bundle in our page."""
    arrival = mturk.Arrival(assignment_id, hit, worker_id, SANDBOX + "/mturk/externalSubmit")
    bundle = mturk.session_start(arrival)
    for n in range(bundle.size):
        step = base.bundle_next(bundle)
        base.bundle_submit(
            bundle, assignment_id=step.assignment.pk, answer={"answer": True}, idempotency_key=f"{n}"
        )
    bundle.refresh_from_db()
    return bundle


def gold_says(bundle, recommendation, monkeypatch):
    """Gold's decision rows for the bundle's items, standing as they are (no recomputation in this test)."""
    monkeypatch.setattr(mturk_sync, "payments_decide", lambda dataset_id: 0)
    for a in Assignment.objects.filter(bundle_item__bundle=bundle):
        PaymentDecision.objects.create(
            assignment=a,
            worker_id=a.worker_id,
            dataset_id=bundle.dataset_id,
            recommendation=recommendation,
            reason="t",
        )


@pytest.mark.django_db
def test_sync_approves_across_pages_and_a_second_run_pays_nothing(published_hit, votes, mturk_client):
    finished_bundle(published_hit)
    mturk_client.add_response(
        "list_assignments_for_hit",
        {"Assignments": [assignment("ASSIGN1", "WORKER1")], "NextToken": "p2"},
        LIST,
    )
    mturk_client.add_response("approve_assignment", {}, {"AssignmentId": "ASSIGN1"})  # settled page by page
    mturk_client.add_response(
        "list_assignments_for_hit",
        {"Assignments": [assignment("GHOST", "WORKER9")]},
        {**LIST, "NextToken": "p2"},
    )
    out = StringIO()
    call_command("sync_hits", stdout=out)
    report = json.loads(out.getvalue())
    assert (report["seen"], report["approved"], report["unmatched"]) == (2, 1, 1)
    statuses = dict(MturkAssignment.objects.values_list("assignment_id", "status"))
    assert statuses == {"ASSIGN1": "approved", "GHOST": "unmatched"}  # never rejected for missing work
    # The second run sees the same assignments and calls nothing but the list (the stubber holds nothing else).
    mturk_client.add_response(
        "list_assignments_for_hit", {"Assignments": [assignment("ASSIGN1", "WORKER1")]}, LIST
    )
    again = mturk_sync.hits_sync(mturk.client())
    assert (again.seen, again.approved, again.bonuses) == (1, 0, 0)


@pytest.mark.django_db
def test_bonus_is_sent_once_with_a_unique_request_token(published_hit, votes, mturk_client, monkeypatch):
    bundle = finished_bundle(published_hit)
    gold_says(bundle, "bonus", monkeypatch)
    mturk_client.add_response(
        "list_assignments_for_hit", {"Assignments": [assignment("ASSIGN1", "WORKER1")]}, LIST
    )
    mturk_client.add_response("approve_assignment", {}, {"AssignmentId": "ASSIGN1"})
    mturk_client.add_response(
        "send_bonus",
        {},
        {
            "WorkerId": "WORKER1",
            "BonusAmount": "0.10",
            "AssignmentId": "ASSIGN1",
            "Reason": mturk_sync.BONUS_REASON,
            "UniqueRequestToken": "bonus-ASSIGN1",
        },
    )
    report = mturk_sync.hits_sync(mturk.client(), sleep=lambda s: None)
    assert (report.approved, report.bonuses) == (1, 1)
    assert str(MturkAssignment.objects.get().bonus_paid) == "0.10"


@pytest.mark.django_db
def test_reject_only_when_gold_rejects_and_pending_waits(published_hit, votes, mturk_client, monkeypatch):
    bundle = finished_bundle(published_hit)
    monkeypatch.setattr(mturk_sync, "payments_decide", lambda dataset_id: 0)
    mturk_client.add_response(
        "list_assignments_for_hit", {"Assignments": [assignment("ASSIGN1", "WORKER1")]}, LIST
    )
    assert mturk_sync.hits_sync(mturk.client()).waiting == 1  # no decision yet: nothing is called
    gold_says(bundle, "approve", monkeypatch)
    first = Assignment.objects.filter(bundle_item__bundle=bundle).first()
    PaymentDecision.objects.create(
        assignment=first,
        worker_id=first.worker_id,
        dataset_id=bundle.dataset_id,
        recommendation="reject",
        reason="g",
    )
    mturk_client.add_response(
        "list_assignments_for_hit", {"Assignments": [assignment("ASSIGN1", "WORKER1")]}, LIST
    )
    mturk_client.add_response(
        "reject_assignment", {}, {"AssignmentId": "ASSIGN1", "RequesterFeedback": mturk_sync.REJECT_FEEDBACK}
    )
    assert mturk_sync.hits_sync(mturk.client()).rejected == 1
    assert MturkAssignment.objects.get().status == MturkAssignmentStatus.REJECTED


@pytest.mark.django_db
def test_an_approval_lost_before_commit_is_read_back_not_repeated(published_hit, votes, mturk_client):
    finished_bundle(published_hit)
    mturk_client.add_response(
        "list_assignments_for_hit", {"Assignments": [assignment("ASSIGN1", "WORKER1")]}, LIST
    )
    mturk_client.add_client_error(
        "approve_assignment",
        service_error_code="RequestError",
        service_message="This operation can be called with a status of: Submitted",
    )
    mturk_client.add_response(
        "get_assignment",
        {"Assignment": assignment("ASSIGN1", "WORKER1", status="Approved")},
        {"AssignmentId": "ASSIGN1"},
    )
    assert mturk_sync.hits_sync(mturk.client()).approved == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_syncs_at_once_approve_and_pay_once(published_hit, votes, monkeypatch):
    """Run B starts while run A holds the assignment (inside A's approve call): B skips the locked row and
    calls nothing but the list; A approves and pays once."""
    bundle = finished_bundle(published_hit)
    gold_says(bundle, "bonus", monkeypatch)
    client_a, stub_a = stubbed_client()
    client_b, stub_b = stubbed_client()
    stub_a.add_response("list_assignments_for_hit", {"Assignments": [assignment("ASSIGN1", "WORKER1")]}, LIST)
    stub_a.add_response("approve_assignment", {}, {"AssignmentId": "ASSIGN1"})
    stub_a.add_response("send_bonus", {})
    stub_b.add_response("list_assignments_for_hit", {"Assignments": [assignment("ASSIGN1", "WORKER1")]}, LIST)
    reports = {}

    def run_b():
        try:
            reports["b"] = mturk_sync.hits_sync(client_b)
        except Exception as exc:  # surfaced by the assertion below
            reports["b"] = exc

    def run_b_meanwhile(**kwargs):
        thread = threading.Thread(target=in_thread(run_b))
        thread.start()
        thread.join()

    client_a.meta.events.register("before-parameter-build.mturk.ApproveAssignment", run_b_meanwhile)
    with stub_a, stub_b:
        reports["a"] = mturk_sync.hits_sync(client_a)
    assert not isinstance(reports["b"], Exception), reports["b"]
    stub_a.assert_no_pending_responses()
    stub_b.assert_no_pending_responses()
    assert (reports["a"].approved, reports["a"].bonuses) == (1, 1)
    assert (reports["b"].approved, reports["b"].bonuses, reports["b"].skipped_locked) == (0, 0, 1)


def test_the_celery_route_for_mturk_names_real_tasks_and_beat_runs_the_sync(settings):
    from config.celery import app

    app.loader.import_default_modules()
    assert {"crowd.mturk.hits_publish", "crowd.mturk.hits_sync"} <= set(app.tasks)
    assert app.amqp.router.route({}, "crowd.mturk.hits_sync")["queue"].name == "mturk"
    assert settings.CELERY_BEAT_SCHEDULE["mturk-sync-hits"]["task"] in app.tasks


@pytest.mark.django_db
def test_workers_gold_blocked_are_blocked_on_mturk_once(published_hit, votes, mturk_client):
    from gold.models import Block

    bundle = finished_bundle(published_hit)
    Block.objects.create(
        worker=bundle.worker, dataset=bundle.dataset, kind="all", answered=10, correct=2, p_below=0.99
    )
    mturk_client.add_response("list_assignments_for_hit", {"Assignments": []}, LIST)
    mturk_client.add_response(
        "create_worker_block", {}, {"WorkerId": "WORKER1", "Reason": mturk_sync.BLOCK_REASON}
    )
    assert mturk_sync.hits_sync(mturk.client()).blocked == 1
    mturk_client.add_response("list_assignments_for_hit", {"Assignments": []}, LIST)
    assert mturk_sync.hits_sync(mturk.client()).blocked == 0  # sent once


@pytest.mark.django_db
def test_an_unconfirmed_session_is_confirmed_by_mturks_list_and_its_spend_recorded(
    published_hit, votes, mturk_client, monkeypatch
):
    bundle = finished_bundle(published_hit)
    MturkAssignment.objects.update(confirmed=False)  # opened before MTurk could confirm it (not submitted)
    gold_says(bundle, "bonus", monkeypatch)
    mturk_client.add_response(
        "list_assignments_for_hit", {"Assignments": [assignment("ASSIGN1", "WORKER1")]}, LIST
    )
    mturk_client.add_response("approve_assignment", {}, {"AssignmentId": "ASSIGN1"})
    mturk_client.add_response("send_bonus", {})
    assert mturk_sync.hits_sync(mturk.client()).approved == 1
    row = MturkAssignment.objects.get()
    assert row.confirmed
    # $0.50 reward + 20% fee (3 assignments per HIT) = $0.10; $0.10 bonus + 20% = $0.02.
    assert (str(row.reward_paid), str(row.bonus_paid), str(row.fees_paid)) == ("0.50", "0.10", "0.12")


@pytest.mark.django_db
def test_ids_mturk_lists_under_another_worker_are_never_paid(published_hit, votes, mturk_client, monkeypatch):
    bundle = finished_bundle(
        published_hit, worker_id="FORGED"
    )  # the page was opened with a made-up worker id
    MturkAssignment.objects.update(confirmed=False)
    gold_says(bundle, "bonus", monkeypatch)
    mturk_client.add_response(
        "list_assignments_for_hit", {"Assignments": [assignment("ASSIGN1", "REALWORKER")]}, LIST
    )
    report = mturk_sync.hits_sync(mturk.client())  # the stubber holds no approve: a call would fail here
    assert (report.unmatched, report.approved, report.bonuses) == (1, 0, 0)
    row = MturkAssignment.objects.get()
    assert (row.status, row.confirmed, str(row.bonus_paid)) == ("unmatched", False, "0.00")
