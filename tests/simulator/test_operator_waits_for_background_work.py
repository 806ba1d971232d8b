"""The simulator's operator, once the crowd ran dry, waits for the background work the platform owes the dataset:
the questions waiting for a calibration table are served only after a Celery worker rebuilt it, and a quality
test that blocks a spammer reopens the questions their votes decided. A run that stopped first left them open
for good (the 10-minute soak: a `full` run ended after 51 s with 8 questions open; a CI soak's six runs left 23
open after late quality tests)."""

from __future__ import annotations

import pytest

from gold.quality import QUALITY_TASK
from outbox.models import Message, MessageState
from simulator import operators
from simulator.operators import REBUILD_TASK, background_awaited
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
    assert background_awaited(dataset.pk) == 0


def test_a_rebuild_owed_is_waited_for_until_a_worker_ran_it(monkeypatch):
    dataset = factories.DatasetFactory()
    rebuild = owed(dataset, state=MessageState.SENT)
    polls = []

    def worker_runs_it_meanwhile(seconds):
        polls.append(seconds)
        if len(polls) == 3:
            Message.objects.filter(pk=rebuild.pk).update(state=MessageState.DONE)

    monkeypatch.setattr(operators.time, "sleep", worker_runs_it_meanwhile)
    assert background_awaited(dataset.pk) == 1
    assert len(polls) == 3


def test_a_rebuild_that_never_runs_is_left_after_the_timeout(monkeypatch):
    dataset = factories.DatasetFactory()
    owed(dataset, state=MessageState.RUNNING)
    monkeypatch.setattr(operators.time, "sleep", lambda s: None)
    assert background_awaited(dataset.pk, timeout=0.05) == 0


@pytest.mark.django_db(transaction=True)
def test_a_pending_quality_test_is_waited_for_when_a_relay_outside_the_process_sends_it(monkeypatch):
    """Outside a transaction a pending message is the relay's to send (a broker back from an outage), so it is
    owed: the operator waits until a worker ran the test that may block a spammer and reopen questions."""
    dataset = factories.DatasetFactory()
    test = owed(dataset, task_name=QUALITY_TASK, state=MessageState.PENDING)
    polls = []

    def relay_and_worker_run_it(seconds):
        polls.append(seconds)
        state = MessageState.SENT if len(polls) == 1 else MessageState.DONE
        Message.objects.filter(pk=test.pk).update(state=state)

    monkeypatch.setattr(operators.time, "sleep", relay_and_worker_run_it)
    assert background_awaited(dataset.pk) == 1
    assert len(polls) == 2


@pytest.mark.django_db(transaction=True)
def test_the_sweep_relays_what_the_answers_recorded_for_later_instead_of_waiting_for_a_relay(monkeypatch):
    """`simulate` in process has no beat: a quality test recorded with a submit's writes (sent only by the relay)
    stayed pending, and every sweep waited the whole timeout for it (a CI run's boxes scenario never ended). The
    operator runs the schedule's relay after its sweep, without the grace left to on-commit sends."""
    dataset = factories.DatasetFactory()
    test = owed(dataset, task_name=QUALITY_TASK, state=MessageState.PENDING)  # recorded just now
    sent = []

    def worker_runs_it(message_id, countdown=0):
        sent.append(message_id)
        Message.objects.filter(pk=message_id).update(state=MessageState.DONE)
        return True

    monkeypatch.setattr(operators.outbox_services, "message_send", worker_runs_it)
    monkeypatch.setattr(
        operators.time, "sleep", lambda s: pytest.fail("waited for a relay that is not there")
    )
    assert operators.ShellOperator().background_awaited(dataset.name) == 1
    assert sent == [test.pk]


@pytest.mark.django_db(transaction=True)
def test_the_sweep_relays_until_nothing_owed_is_pending_however_many_the_relay_sends_at_once(monkeypatch):
    """One relay sends at most its limit (500): a DET-200 run owed more quality tests than that, and the sweep
    waited its whole timeout for the rest, which nothing would send."""
    dataset = factories.DatasetFactory()
    tests = [owed(dataset, task_name=QUALITY_TASK, state=MessageState.PENDING) for _ in range(5)]
    sent = []

    def worker_runs_it(message_id, countdown=0):
        sent.append(message_id)
        Message.objects.filter(pk=message_id).update(state=MessageState.DONE)
        return True

    relay = operators.outbox_services.relay
    monkeypatch.setattr(operators.outbox_services, "relay", lambda **kw: relay(limit=2, **kw))
    monkeypatch.setattr(operators.outbox_services, "message_send", worker_runs_it)
    monkeypatch.setattr(
        operators.time, "sleep", lambda s: pytest.fail("waited for messages no relay was left to send")
    )
    assert operators.ShellOperator().background_awaited(dataset.name) == 5
    assert sorted(sent) == sorted(t.pk for t in tests)
