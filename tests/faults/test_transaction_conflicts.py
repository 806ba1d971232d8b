"""A deadlock or serialization failure during an idempotent request (issue 32): the server runs the request again
inside it, a bounded number of times, and the answer is stored once; when every run fails so, the worker is
answered 503 with Retry-After, never 500, and nothing is kept. The conflict is forced where a real one strikes
a submit: in the counters' writes, after the answer's own."""

from __future__ import annotations

import psycopg
import pytest
from django.db import OperationalError

from annotation import counters
from annotation.models import Assignment, AssignmentState, Task, UsageCounter, WorkerTally
from config import dbconnection
from config.roles import WORKERS
from crowd.services import user_create
from tests.conftest import client_for
from tests.faults.test_connection_kills import queue_tasks

pytestmark = pytest.mark.django_db


@pytest.fixture
def leased(monkeypatch):
    monkeypatch.setattr(dbconnection, "CONFLICT_PAUSE", 0.0, raising=False)
    queue_tasks(1)
    client = client_for(user_create(username="conflicted", password=None, roles=(WORKERS,)))
    lease = client.get("/api/v1/tasks/next")
    assert lease.status_code == 200
    return client, f"/api/v1/assignments/{lease.json()['id']}/submit"


def conflicting(monkeypatch, failures: int, error=psycopg.errors.DeadlockDetected) -> list[int]:
    """The first `failures` submits fail as PostgreSQL fails a transaction it rolled back (Django's
    OperationalError caused by the driver's error with its SQLSTATE); returns the runs made so far."""
    runs: list[int] = []
    real = counters.answers_counted

    def answers_counted(*args, **kwargs):
        runs.append(len(runs) + 1)
        real(*args, **kwargs)
        if len(runs) <= failures:
            raise OperationalError("deadlock detected") from error("deadlock detected")

    monkeypatch.setattr(counters, "answers_counted", answers_counted)
    return runs


@pytest.mark.parametrize(
    "error", [psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure], ids=["40P01", "40001"]
)
def test_a_submit_that_meets_a_deadlock_is_run_again_in_the_request_and_stored_once(
    leased, monkeypatch, error
):
    client, path = leased
    runs = conflicting(monkeypatch, failures=2, error=error)
    response = client.post(path, {"answer": {"answer": True}}, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert response.status_code == 201, response.content
    assert runs == [1, 2, 3]
    assert Assignment.objects.filter(state=AssignmentState.SUBMITTED).count() == 1
    assert Task.objects.get().answers_count == 1
    assert sum(UsageCounter.objects.values_list("answers", flat=True)) == 1
    assert list(WorkerTally.objects.values_list("answers", flat=True)) == [1]


def test_a_submit_still_conflicting_after_its_retries_answers_503_with_retry_after_and_keeps_nothing(
    leased, monkeypatch
):
    client, path = leased
    runs = conflicting(monkeypatch, failures=99)
    response = client.post(path, {"answer": {"answer": True}}, format="json", HTTP_IDEMPOTENCY_KEY="k-2")
    assert response.status_code == 503 and response["Retry-After"] == "1"
    assert "retry" in response.json()["detail"]
    assert len(runs) == 1 + dbconnection.CONFLICT_RETRIES
    assert Assignment.objects.get().state == AssignmentState.LEASED
    assert Task.objects.get().answers_count == 0
    monkeypatch.undo()
    again = client.post(path, {"answer": {"answer": True}}, format="json", HTTP_IDEMPOTENCY_KEY="k-2")
    assert again.status_code == 201, "the client's retry with the same key goes through"
    assert Task.objects.get().answers_count == 1


def test_a_batch_of_answers_that_meets_a_deadlock_is_run_again_whole_and_each_answer_stored_once(monkeypatch):
    """The batch submit carries a key per answer in its body, not in a header: the server runs it again all the
    same (`idempotent_by_item_keys`), and the answers a failed run had stored before the conflict count once."""
    monkeypatch.setattr(dbconnection, "CONFLICT_PAUSE", 0.0, raising=False)
    queue_tasks(3)
    client = client_for(user_create(username="batched", password=None, roles=(WORKERS,)))
    leases = client.get("/api/v1/tasks/next", {"count": 3}).json()["tasks"]
    assert len(leases) == 3
    runs = conflicting(monkeypatch, failures=2)
    answers = [
        {"assignment": lease["id"], "idempotency_key": f"b-{i}", "answer": {"answer": True}}
        for i, lease in enumerate(leases)
    ]
    response = client.post("/api/v1/assignments/submit", {"answers": answers}, format="json")
    assert response.status_code == 200, response.content
    assert [r["code"] for r in response.json()["results"]] == ["stored"] * 3
    assert not any(r["replayed"] for r in response.json()["results"]), "the failed runs kept nothing"
    assert len(runs) == 2 + 3
    assert Assignment.objects.filter(state=AssignmentState.SUBMITTED).count() == 3
    assert list(Task.objects.values_list("answers_count", flat=True)) == [1, 1, 1]
    assert sum(UsageCounter.objects.values_list("answers", flat=True)) == 3


def test_a_batch_of_answers_may_run_again_even_after_a_connection_lost_around_its_commit():
    """Running a batch again replays what its keys stored, so the server may run it once more even when the
    first run's COMMIT may have gone through (which the rule for JSON writes that committed nothing does not
    cover); an ordinary write (creating a dataset) may not."""
    from django.test import RequestFactory
    from django.urls import resolve

    request = RequestFactory().post("/api/v1/assignments/submit", {}, content_type="application/json")
    assert dbconnection._runs_again(request, resolve("/api/v1/assignments/submit").func)
    organizer_write = RequestFactory().post("/api/v1/datasets/", {}, content_type="application/json")
    assert not dbconnection._runs_again(organizer_write, resolve("/api/v1/datasets/").func)


def failing_in_turn(monkeypatch, failures: list[Exception]) -> list[int]:
    """The submits fail in turn with `failures` (each raised as Django raises the driver's error), then go
    through; returns the runs made so far."""
    runs: list[int] = []
    real = counters.answers_counted

    def answers_counted(*args, **kwargs):
        runs.append(len(runs) + 1)
        real(*args, **kwargs)
        if len(runs) <= len(failures):
            cause = failures[len(runs) - 1]
            raise OperationalError(str(cause)) from cause

    monkeypatch.setattr(counters, "answers_counted", answers_counted)
    return runs


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_submit_whose_run_again_meets_the_other_kind_of_failure_goes_on_and_is_stored_once(
    leased, monkeypatch
):
    """Under a killed backend and a busy lock at once (the soak's faults), a run again after a deadlock may lose
    its connection and the next one meet a deadlock again: each kind is run again within its own count, so the
    submit is stored once and answered 201, not 503."""
    client, path = leased
    lost = psycopg.OperationalError("server closed the connection unexpectedly")
    runs = failing_in_turn(
        monkeypatch,
        [
            psycopg.errors.DeadlockDetected("deadlock detected"),
            lost,
            psycopg.errors.DeadlockDetected("again"),
        ],
    )
    response = client.post(path, {"answer": {"answer": True}}, format="json", HTTP_IDEMPOTENCY_KEY="k-mixed")
    assert response.status_code == 201, response.content
    assert runs == [1, 2, 3, 4]
    assert Assignment.objects.filter(state=AssignmentState.SUBMITTED).count() == 1
    assert Task.objects.get().answers_count == 1
    assert sum(UsageCounter.objects.values_list("answers", flat=True)) == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_submit_losing_its_connection_more_often_than_its_runs_again_answers_503_and_keeps_nothing(
    leased, monkeypatch
):
    client, path = leased
    lost = psycopg.OperationalError("server closed the connection unexpectedly")
    runs = failing_in_turn(monkeypatch, [lost] * 99)
    response = client.post(path, {"answer": {"answer": True}}, format="json", HTTP_IDEMPOTENCY_KEY="k-lost")
    assert response.status_code == 503 and response["Retry-After"] == "1"
    assert len(runs) == 1 + dbconnection.LOST_RETRIES
    assert Task.objects.get().answers_count == 0
