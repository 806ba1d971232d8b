"""The simulator's operator, once the crowd ran dry, waits for the calibration rebuilds the platform owes the
dataset: the questions waiting for that table are served only after a Celery worker ran it, and a run that
stopped first left them open for good (the 10-minute soak: a `full` run ended after 51 s with 8 questions open)."""

from __future__ import annotations

import pytest

from outbox.models import Message, MessageState
from simulator import operators
from simulator.operators import REBUILD_TASK, rebuilds_awaited
from tests import factories

pytestmark = pytest.mark.django_db


def owed(dataset, task_name=REBUILD_TASK, state=MessageState.PENDING):
    return Message.objects.create(
        task_name=task_name, args=["hierarchy", 1, dataset.pk], dataset=dataset, state=state
    )


def test_nothing_owed_is_not_waited_for(monkeypatch):
    dataset = factories.DatasetFactory()
    owed(dataset, state=MessageState.DONE)
    owed(dataset, task_name="benchmark.tasks.export_job_run", state=MessageState.SENT)
    owed(dataset)  # pending: the relay's (or a commit's) to send, no worker has it
    owed(factories.DatasetFactory(), state=MessageState.SENT)  # another dataset's rebuild
    monkeypatch.setattr(operators.time, "sleep", lambda s: pytest.fail("waited"))
    assert rebuilds_awaited(dataset.pk) == 0


def test_a_rebuild_owed_is_waited_for_until_a_worker_ran_it(monkeypatch):
    dataset = factories.DatasetFactory()
    rebuild = owed(dataset, state=MessageState.SENT)
    polls = []

    def worker_runs_it_meanwhile(seconds):
        polls.append(seconds)
        if len(polls) == 3:
            Message.objects.filter(pk=rebuild.pk).update(state=MessageState.DONE)

    monkeypatch.setattr(operators.time, "sleep", worker_runs_it_meanwhile)
    assert rebuilds_awaited(dataset.pk) == 1
    assert len(polls) == 3


def test_a_rebuild_that_never_runs_is_left_after_the_timeout(monkeypatch):
    dataset = factories.DatasetFactory()
    owed(dataset, state=MessageState.RUNNING)
    monkeypatch.setattr(operators.time, "sleep", lambda s: None)
    assert rebuilds_awaited(dataset.pk, timeout=0.05) == 0
