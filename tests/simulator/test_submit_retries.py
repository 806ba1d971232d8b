"""The simulator submits as the worker page does (issue 32): a submit answered 5xx, or not answered at all, is
sent again with the same Idempotency-Key, the retries are counted in its figures, and every answer is stored
once."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from annotation.models import Assignment, AssignmentState
from simulator import driver
from simulator.management.commands import simulate
from simulator.transport import InProcessTransport, Reply

pytestmark = pytest.mark.django_db


class FlakyTransport(InProcessTransport):
    """The platform in-process behind a flaky network: the first attempt of every 4th distinct submit is
    answered 503 before it reaches the platform; that of every 5th (not 4th) reaches it and is stored, but its
    reply is lost with the connection."""

    instances: list[FlakyTransport] = []

    def __init__(self) -> None:
        super().__init__()
        self.keys: set[str] = set()
        self.refused = self.lost = 0
        FlakyTransport.instances.append(self)

    def call(self, method, path, **kwargs) -> Reply:
        key = (kwargs.get("headers") or {}).get("Idempotency-Key")
        if method != "POST" or not path.endswith("/submit") or key in self.keys:
            return super().call(method, path, **kwargs)
        self.keys.add(key)
        if len(self.keys) % 4 == 0:
            self.refused += 1
            return Reply(503, {"detail": "retry it"})
        reply = super().call(method, path, **kwargs)
        if len(self.keys) % 5 == 0:
            self.lost += 1
            raise ConnectionResetError("connection reset by peer")
        return reply


def test_failed_submits_are_sent_again_with_their_key_counted_and_stored_once(monkeypatch):
    monkeypatch.setattr(simulate, "InProcessTransport", FlakyTransport)
    monkeypatch.setattr(driver, "SUBMIT_RETRY_PAUSE", 0.0, raising=False)
    out = io.StringIO()
    call_command(
        "simulate", scenario="verify", images=8, workers=4, seed=1, synsets=3, stdout=out, no_progress=True
    )
    summary = json.loads(out.getvalue())
    (transport,) = FlakyTransport.instances
    assert transport.refused >= 3 and transport.lost >= 2, (transport.refused, transport.lost)
    assert summary["submit_errors"] == 0, summary
    assert summary["submit_retries"] == transport.refused + transport.lost
    # Each answer once: the retry of a stored answer is its replay, not a second answer.
    stored = Assignment.objects.filter(state=AssignmentState.SUBMITTED).count()
    assert summary["tasks_answered"] == stored == len(transport.keys)


class RefusingFirstPost(InProcessTransport):
    """The platform in-process, whose first answer to every organizer POST is a 503 that kept nothing (a
    database connection killed during the request)."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: list[str] = []

    def call(self, method, path, **kwargs) -> Reply:
        if method == "POST" and "/assignments/" not in path and path not in self.refused:
            self.refused.append(path)
            return Reply(503, {"detail": "The database connection was lost during this request; retry it."})
        return super().call(method, path, **kwargs)


def test_the_organizers_setup_calls_are_sent_again_after_a_503_that_kept_nothing(monkeypatch):
    monkeypatch.setattr(simulate, "InProcessTransport", RefusingFirstPost)
    monkeypatch.setattr(driver, "SUBMIT_RETRY_PAUSE", 0.0)
    out = io.StringIO()
    call_command(
        "simulate", scenario="verify", images=6, workers=5, seed=2, synsets=2, stdout=out, no_progress=True
    )
    summary = json.loads(out.getvalue())
    assert summary["tasks_answered"] > 0 and summary["submit_errors"] == 0, summary
