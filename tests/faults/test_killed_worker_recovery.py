"""Background work lost with its worker comes back within minutes whatever the task time limit (issue 35, item 8):
a running outbox row is leased and its worker renews the lease while the task runs, so a whole worker killed
with SIGKILL is noticed when the lease runs out and the relay sends the row again (docs/deployment.md gives
the bound: OUTBOX_LEASE_SECONDS + OUTBOX_RELAY_SECONDS); the soft time limit is a sane share of the hard one;
a failed attempt records its failure even when the task left the database connection in a broken state."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.db import connection, transaction
from django.utils import timezone

from benchmark.models import ExportJob, JobState
from config.tasklimits import soft_time_limit
from outbox import services as outbox
from outbox.models import Message, MessageState
from tests import factories
from tests.conftest import client_for

from .conftest import BROKER_URL, REPO_ROOT, celery_pointed_at, closed_port
from .test_background_work import EXPORT, RowLock, message_row, request_export, wait_for

LEASE_SECONDS = 3  # the workers' OUTBOX_LEASE_SECONDS here (60 by default)


@pytest.mark.broker
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_export_whose_whole_worker_was_killed_is_sent_again_once_its_lease_passes_not_the_time_limit(
    organizer, workers
):
    dataset = factories.DatasetFactory(organizers=[organizer])
    factories.ImageFactory.create_batch(3, dataset=dataset)
    # The default 30-minute time limit: recovery must not wait for it.
    env = {
        "CROWDLABEL_OUTBOX_LEASE_SECONDS": str(LEASE_SECONDS),
        "CROWDLABEL_TASK_TIME_LIMIT_SECONDS": "1800",
    }
    first, log = workers.start(pool="prefork", env=env)
    with celery_pointed_at(BROKER_URL, workers.prefix):
        job_id = request_export(client_for(organizer), dataset).json()["id"]
        lock = RowLock(job_id)  # the export blocks inside its task until released
        try:
            wait_for(lambda: message_row().state == "running", "the export to start", log)
            # The heartbeat keeps a long run's lease ahead of the clock while its worker lives.
            started_at = message_row().started_at
            wait_for(
                lambda: message_row().lease_until > started_at + timedelta(seconds=LEASE_SECONDS),
                "the heartbeat to renew the running export's lease",
                log,
            )
            assert outbox.relay()["resent"] == 0, "a live run is left alone, however long it takes"
            workers.kill_all(first)  # main process and pool: the message stays unacknowledged in Redis
            killed_at = time.monotonic()
        finally:
            lock.release()
        lease_until = message_row().lease_until  # no heartbeat renews it any more
        # Within its lease the run may still be alive: a relay round then leaves it alone (asked at an instant
        # inside the lease, so that a slow machine reaching this line late does not change the question).
        assert outbox.relay(now=lease_until - timedelta(milliseconds=1))["resent"] == 0

        # Once the lease has passed, the next relay round sends it again: the bound docs/deployment.md gives
        # (OUTBOX_LEASE_SECONDS + OUTBOX_RELAY_SECONDS), not the 30-minute time limit.
        wait_for(
            lambda: timezone.now() > message_row().lease_until, "the dead worker's lease to pass", timeout=60
        )
        assert outbox.relay()["resent"] == 1, "the first relay round after the lease sends the export again"
        resent_after = time.monotonic() - killed_at
        _, second_log = workers.start(pool="prefork", env=env)
        wait_for(
            lambda: ExportJob.objects.get(pk=job_id).state == JobState.DONE,
            "the export to finish",
            second_log,
        )
        done_after = time.monotonic() - killed_at
    print(f"back on the broker {resent_after:.1f} s after the kill, done {done_after:.1f} s after it")
    message = message_row()
    assert message.state == MessageState.DONE and message.attempts == 2 and message.lease_until is None


@pytest.mark.parametrize(
    ("hard", "soft"), [(1800, 1740), (3600, 3540), (600, 540), (120, 108), (60, 54), (10, 9), (1, 0.9)]
)
def test_the_soft_time_limit_comes_a_tenth_early_at_most_a_minute(hard, soft):
    assert soft_time_limit(hard) == pytest.approx(soft)


def test_the_celery_app_takes_its_soft_limit_from_the_hard_one():
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "CROWDLABEL_TASK_TIME_LIMIT_SECONDS": "60",
    }
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "from config.celery import app; c = app.conf; print(c.task_time_limit, c.task_soft_time_limit)",
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert [float(value) for value in shown] == [60, 54]


def interrupted_in_an_atomic_block(job_id):
    """A soft time limit that lands at the top of an atomic block's exit: the block is never left."""
    transaction.atomic().__enter__()
    ExportJob.objects.filter(pk=job_id).update(progress=1)
    raise SoftTimeLimitExceeded()


def interrupted_while_switching_autocommit(job_id):
    """A soft time limit that lands inside Django's set_autocommit(False), after the driver switched and before
    Django noted it: the next query opens a transaction Django does not know about."""
    connection.ensure_connection()
    connection.connection.autocommit = False
    ExportJob.objects.filter(pk=job_id).update(progress=1)
    raise SoftTimeLimitExceeded()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "interrupted",
    [
        interrupted_in_an_atomic_block,
        # psycopg's refusal, as the audit saw it; SQLite's driver has no such state.
        pytest.param(interrupted_while_switching_autocommit, marks=pytest.mark.postgres),
    ],
)
def test_a_failed_attempt_is_recorded_whatever_state_it_left_the_connection_in(
    organizer, monkeypatch, interrupted
):
    dataset = factories.DatasetFactory(organizers=[organizer])
    monkeypatch.setattr("benchmark.services.export_job_run", interrupted)
    with celery_pointed_at(f"redis://127.0.0.1:{closed_port()}/0"):  # not eager, and nothing to deliver to
        job_id = request_export(client_for(organizer), dataset).json()["id"]
        message = Message.objects.get(task_name=EXPORT)
        outcome = outbox.message_run(message.pk, delivery="first")
    assert outcome == "retrying"
    # Read on a connection of its own: what is committed, whatever this one holds.
    connection.close()
    message.refresh_from_db()
    assert message.state == MessageState.PENDING and message.attempts == 1, "never left running"
    assert "SoftTimeLimitExceeded" in message.last_error and message.lease_until is None
    assert ExportJob.objects.get(pk=job_id).progress == 0, "the interrupted transaction was rolled back"
