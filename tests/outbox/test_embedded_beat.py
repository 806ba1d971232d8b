"""Scheduled work in the embedded default (issue 32): without a broker, `runserver` runs the beat schedule in a
thread of its own, so lease expiry, the outbox relay, the overlap scan and the stuck-question sweep happen with
nobody running a command; never with a broker; a task that fails does not stop the schedule."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from celery import shared_task
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone

from annotation import queue
from annotation.models import Assignment, AssignmentState, Box, BoxState, Task
from consensus.creation import Target, questions_create
from consensus.models import QuestionKind, QuestionState
from outbox import embedded_beat
from outbox.models import Message, MessageState
from review.models import ItemState, ReviewItem, ReviewKind
from tests import factories
from tests.annotation.boxhelpers import answer
from tests.consensus.conftest import make_images, make_workers, small_settings
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
FAILING_TASK = "tests.outbox.test_embedded_beat.fails"


@shared_task(name=FAILING_TASK)
def fails() -> None:
    raise RuntimeError("a scheduled task that always fails")


def fast(schedule: dict, seconds: float = 0.2) -> dict:
    """The schedule with every interval shortened, so a test sees several runs of each entry."""
    return {name: {**spec, "schedule": timedelta(seconds=seconds)} for name, spec in schedule.items()}


def expired_lease(dataset) -> Assignment:
    """A task leased by a worker whose lease ran out an hour ago."""
    factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))
    worker = make_workers(1, prefix="leaser")[0]
    assignment = queue.task_lease_next(worker=worker, dataset_id=dataset.pk)
    past = timezone.now() - timedelta(hours=1)
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=past)
    Task.objects.filter(pk=assignment.task_id).update(lease_expires_at=past)
    return assignment


def starved_question(dataset, concept):
    """An open question every worker of the dataset has voted on (2 yes, 1 no): only the sweep moves it."""
    small_settings(dataset, calibration_votes=3)
    [img] = make_images(dataset, 1)
    [question] = questions_create(
        dataset=dataset, kind=QuestionKind.IMAGE_VERIFY, concept=concept, targets=[Target(image=img)]
    )
    for worker, vote in zip(make_workers(3, prefix="voter"), (True, True, False), strict=True):
        answer(worker, "question", {"answer": vote})
    return question


def duplicate_boxes(dataset, concept) -> None:
    """Two accepted boxes of one class on one image, IoU 0.85: a duplicate pair for the overlap scan."""
    img = factories.ImageFactory(dataset=dataset, width=100, height=100)
    for x in (0, 2):
        Box.objects.create(
            image=img, concept=concept, x1=x, y1=x, x2=50 + x, y2=50 + x, state=BoxState.ACCEPTED
        )


@pytest.mark.django_db(transaction=True)
def test_every_task_of_the_schedule_runs_in_a_thread_of_its_own_and_does_its_work(settings, dataset):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "STARVED_AFTER_SECONDS": 0}
    concept = factories.ConceptFactory(wnid="n02123045", name="tabby cat")
    lease = expired_lease(factories.DatasetFactory())  # its worker is no voter of the question below
    question = starved_question(dataset, concept)
    duplicate_boxes(dataset, concept)
    pending = Message.objects.create(
        task_name="annotation.tasks.leases_expire", available_at=timezone.now() - timedelta(minutes=1)
    )

    beat = embedded_beat.EmbeddedBeat(fast(settings.CELERY_BEAT_SCHEDULE))
    assert {e.task for e in beat.entries} == {s["task"] for s in settings.CELERY_BEAT_SCHEDULE.values()}
    thread = beat.start()
    try:
        assert thread.daemon and thread is not threading.current_thread()
        wait_until(lambda: all(e.runs >= 2 for e in beat.entries), what="every entry ran twice")
        assert {e.name: e.last_error for e in beat.entries if e.failures} == {}
        lease.refresh_from_db()
        assert lease.state == AssignmentState.EXPIRED  # expire-leases
        assert Message.objects.get(pk=pending.pk).state == MessageState.DONE  # outbox-relay
        question.refresh_from_db()
        assert question.state == QuestionState.REVIEW  # review-queue-stuck: nobody left to ask
        wait_until(
            lambda: ReviewItem.objects.filter(dataset=dataset, kind=ReviewKind.DUPLICATE).exists(),
            what="the overlap scan queued the duplicate pair",
        )  # review-scan-overlaps
        assert ReviewItem.objects.filter(
            dataset=dataset, kind=ReviewKind.AMBIGUOUS, subject__id=question.pk, state=ItemState.OPEN
        ).exists()
    finally:
        beat.stop(timeout=30)
    assert not thread.is_alive()


@pytest.mark.django_db(transaction=True)
def test_a_task_that_fails_is_logged_and_run_again_and_the_others_go_on(settings, dataset, caplog):
    schedule = {
        "fails": {"task": FAILING_TASK, "schedule": timedelta(seconds=0.2)},
        "expire-leases": settings.CELERY_BEAT_SCHEDULE["expire-leases"],
    }
    beat = embedded_beat.EmbeddedBeat(fast(schedule))
    beat.start()
    try:
        failing, expiry = sorted(beat.entries, key=lambda e: e.task != FAILING_TASK)
        wait_until(lambda: failing.failures >= 3 and expiry.runs >= 3, what="three runs of each")
        assert beat.thread.is_alive()
        lease = expired_lease(dataset)  # work that comes after the failures is still done
        wait_until(
            lambda: Assignment.objects.get(pk=lease.pk).state == AssignmentState.EXPIRED,
            what="a lease expired after the failures",
        )
    finally:
        beat.stop(timeout=30)
    assert failing.failures == failing.runs and "always fails" in failing.last_error
    assert expiry.failures == 0
    assert "embedded beat: fails" in caplog.text


def test_it_is_not_started_with_a_broker_or_when_turned_off(settings):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "EMBEDDED_BEAT": True}
    settings.CELERY_TASK_ALWAYS_EAGER = False  # a broker is configured: `celery beat` runs the schedule
    assert embedded_beat.start() is None
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.CROWDLABEL = {**settings.CROWDLABEL, "EMBEDDED_BEAT": False}
    assert embedded_beat.start() is None
    assert not [t for t in threading.enumerate() if t.name == "crowdlabel-embedded-beat"]


def test_tests_run_without_it():
    assert django_settings.CROWDLABEL["EMBEDDED_BEAT"] is False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "sqlite", reason="the embedded default serves SQLite")
def test_runserver_with_its_autoreloader_runs_the_schedule_once_in_the_serving_process(dataset, tmp_path):
    lease = expired_lease(dataset)
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{connection.settings_dict['NAME']}",
        "CROWDLABEL_MEDIA_ROOT": str(tmp_path / "media"),
        "CROWDLABEL_EMBEDDED_BEAT": "1",
        "CROWDLABEL_LEASE_EXPIRY_EVERY_SECONDS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("CELERY_BROKER_URL", None)
    log = tmp_path / "runserver.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "manage.py"),
                "runserver",
                f"127.0.0.1:{free_port()}",
                "--skip-checks",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the reloader's child too, stopped together below
        )
    try:
        wait_until(
            lambda: (
                Assignment.objects.get(pk=lease.pk).state == AssignmentState.EXPIRED
                or server.poll() is not None
            ),
            timeout=120,
            what=f"the server's schedule expired the lease:\n{log.read_text()[-3000:]}",
        )
        assert server.poll() is None, log.read_text()[-3000:]
        started = re.findall(r"Scheduled work runs in this process \(no broker; pid (\d+)\)", log.read_text())
        assert len(started) == 1, log.read_text()[-3000:]
        assert int(started[0]) != server.pid, "the reloader's parent only restarts its child"
        assert "expire-leases (every 1 s)" in log.read_text()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


@pytest.mark.django_db(transaction=True)
def test_a_simulated_crowd_against_a_server_waits_for_its_schedule_to_settle_what_nobody_can_answer(
    settings, dataset, organizer
):
    """`simulate --organizer-token ... --sweep-wait S`: the crowd has run dry with a question open; the
    operator waits (no command of its own) until the server's scheduled sweep has settled it."""
    from rest_framework.authtoken.models import Token

    from simulator.server_setup import ApiOperator
    from simulator.transport import InProcessTransport

    settings.CROWDLABEL = {**settings.CROWDLABEL, "STARVED_AFTER_SECONDS": 0}
    token = Token.objects.create(user=organizer).key
    operator = ApiOperator(InProcessTransport(), token, {}, sweep_wait=60, poll=0.2)
    assert operator.sweep_stuck(dataset.name) == 0, "nothing open: no wait"
    question = starved_question(dataset, factories.ConceptFactory(wnid="n02123045", name="tabby cat"))
    assert ApiOperator(InProcessTransport(), token, {}).sweep_stuck(dataset.name) == 0, "no wait asked"
    question.refresh_from_db()
    assert question.state == QuestionState.OPEN
    beat = embedded_beat.EmbeddedBeat(
        fast({"stuck": settings.CELERY_BEAT_SCHEDULE["review-queue-stuck"]}, 1.0)
    )
    beat.start()
    try:
        assert operator.sweep_stuck(dataset.name) == 1
    finally:
        beat.stop(timeout=30)
    question.refresh_from_db()
    assert question.state == QuestionState.REVIEW
