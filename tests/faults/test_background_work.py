"""Background work is never lost or stuck (issue 18, item 3): with the broker down, requests still answer and
their work waits in the outbox; the relay delivers it once the broker is back; a worker killed with SIGKILL
mid-task has the task redelivered, and after three lost attempts it is parked and shown to the organizer. A job
whose whole worker died: test_killed_worker_recovery.py."""

from __future__ import annotations

import os
import signal
from datetime import timedelta

import psycopg
import pytest
from django.utils import timezone

from benchmark.models import ExportJob, JobState
from consensus import verification
from consensus.models import CalibrationTable, Question, QuestionRole, QuestionState
from hierarchy.models import Concept
from outbox import services as outbox
from outbox.models import Message, MessageState
from tests import factories
from tests.conftest import client_for
from tests.consensus.conftest import make_images, make_workers, small_settings
from tests.consensus.test_calibration_batches import answer_until_closed
from tests.waiting import GENEROUS_SECONDS, wait_until

from .conftest import (
    BROKER_URL,
    celery_pointed_at,
    closed_port,
    database_url_of_the_test_database,
    pool_children,
)

EXPORT = "benchmark.tasks.export_job_run"


def request_export(client, dataset):
    return client.post(
        f"/api/v1/datasets/{dataset.pk}/exports/",
        {"format": "coco", "split": "all", "include_images": False},
        format="json",
    )


def later(seconds: float):
    return timezone.now() + timedelta(seconds=seconds)


@pytest.mark.django_db(transaction=True)
def test_an_export_requested_while_the_broker_is_down_answers_and_runs_once_the_broker_is_back(organizer):
    dataset = factories.DatasetFactory(organizers=[organizer])
    factories.ImageFactory.create_batch(3, dataset=dataset)
    client = client_for(organizer)
    with celery_pointed_at(f"redis://127.0.0.1:{closed_port()}/0"):
        first = request_export(client, dataset)
        repeat = request_export(client, dataset)
        assert outbox.relay(now=later(60))["failed"] == 1, "the relay cannot deliver while the broker is down"
    assert (first.status_code, repeat.status_code) == (201, 200), first.content
    assert first.json()["id"] == repeat.json()["id"], "a repeat joins the job in flight"
    message = Message.objects.get()
    assert (message.task_name, message.args, message.state) == (EXPORT, [first.json()["id"]], "pending")

    # The broker is back (in-process here; a real worker below): the relay's next round delivers it.
    counts = outbox.relay(now=later(60))
    assert counts["sent"] == 1
    assert ExportJob.objects.get().state == JobState.DONE
    message.refresh_from_db()
    assert message.state == MessageState.DONE and message.attempts == 1
    assert outbox.relay(now=later(120)) == {"sent": 0, "resent": 0, "parked": 0, "failed": 0}


@pytest.mark.django_db(transaction=True)
def test_a_vote_completing_a_calibration_batch_with_the_broker_down_is_saved_and_its_rebuild_is_not_lost(
    organizer,
):
    dataset = factories.DatasetFactory(organizers=[organizer])
    concept = Concept.objects.create(wnid="n02084071", name="dog")
    small_settings(dataset, calibration_votes=3)
    make_images(dataset, 8)
    verification.verification_queue(dataset=dataset, concept=concept)
    workers = make_workers(3)
    calibration = list(Question.objects.filter(role=QuestionRole.CALIBRATION).order_by("id"))
    with celery_pointed_at(f"redis://127.0.0.1:{closed_port()}/0"):
        for i, question in enumerate(calibration):
            answer_until_closed(question, workers, i % 2 == 0)
    assert not CalibrationTable.objects.exists(), "the rebuild could not reach a worker"
    assert Message.objects.filter(state=MessageState.PENDING, task_name__startswith="consensus.").exists()

    outbox.relay(now=later(60))
    assert CalibrationTable.objects.get().n_images == 4
    assert not Message.objects.exclude(state=MessageState.DONE).exists()
    paused = Question.objects.filter(state=QuestionState.OPEN, task__state="done")
    assert not paused.exists(), "no calibration question stays paused once the rebuild ran"


@pytest.mark.django_db
def test_a_task_failing_every_attempt_is_parked_after_three_and_shown_to_its_organizer(
    organizer, django_capture_on_commit_callbacks, monkeypatch
):
    dataset = factories.DatasetFactory(organizers=[organizer])
    other = factories.user_with_roles("other-organizer", ("organizers",))
    calls = []

    def broken(job_id):
        calls.append(job_id)
        raise OSError("disk full")

    monkeypatch.setattr("benchmark.services.export_job_run", broken)
    with django_capture_on_commit_callbacks(execute=True):
        job = request_export(client_for(organizer), dataset).json()
    assert len(calls) == 3, "three attempts, then no more"
    message = Message.objects.get()
    assert message.state == MessageState.PARKED and message.attempts == 3
    assert "disk full" in message.last_error
    assert ExportJob.objects.get(pk=job["id"]).state == JobState.FAILED, "the job does not stay queued"

    seen = client_for(organizer).get("/api/v1/background-work/?state=parked").json()
    assert [row["id"] for row in seen["results"]] == [message.pk]
    assert client_for(other).get("/api/v1/background-work/").json()["results"] == []
    assert client_for(other).post(f"/api/v1/background-work/{message.pk}/retry").status_code == 404
    assert client_for(organizer).get("/api/v1/background-work/?state=nonsense").status_code == 400

    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):
        retried = client_for(organizer).post(f"/api/v1/background-work/{message.pk}/retry")
    assert retried.status_code == 200
    message.refresh_from_db()
    assert message.state == MessageState.DONE and message.attempts == 1
    again = client_for(organizer).post(f"/api/v1/background-work/{message.pk}/retry")
    assert again.status_code == 409


# --- real worker processes on a real broker -----------------------------------------------------------------


def wait_for(predicate, what: str, log=None, timeout: float = GENEROUS_SECONDS):
    detail = (lambda: log.read_text()[-3000:]) if log else None
    return wait_until(predicate, what, timeout=timeout, detail=detail)


def message_row() -> Message:
    return Message.objects.get(task_name=EXPORT)


class RowLock:
    """Hold the export job's row lock from another connection: the worker's run blocks inside the task."""

    def __init__(self, job_id: int):
        self.connection = psycopg.connect(database_url_of_the_test_database())
        self.connection.execute("SELECT 1 FROM benchmark_exportjob WHERE id = %s FOR UPDATE", (job_id,))

    def release(self) -> None:
        self.connection.rollback()
        self.connection.close()


@pytest.mark.broker
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_pool_process_killed_mid_export_is_retried_then_parked_after_three_lost_attempts(
    organizer, workers
):
    dataset = factories.DatasetFactory(organizers=[organizer])
    factories.ImageFactory.create_batch(3, dataset=dataset)
    worker, log = workers.start(pool="prefork")
    with celery_pointed_at(BROKER_URL, workers.prefix):
        job_id = request_export(client_for(organizer), dataset).json()["id"]
        lock = RowLock(job_id)
        try:
            for attempt in (1, 2, 3):
                wait_for(
                    lambda a=attempt: message_row().state == "running" and message_row().attempts == a,
                    f"attempt {attempt} to start",
                    log,
                )
                (child,) = wait_for(lambda: pool_children(worker), "the pool process", log)
                os.kill(child, signal.SIGKILL)  # the pool process dies mid-task, as under the OOM killer
                assert ExportJob.objects.get(pk=job_id).state in (JobState.QUEUED, JobState.RUNNING)
        finally:
            lock.release()
        # The fourth delivery finds three lost attempts: the work is parked and the job fails, visibly.
        wait_for(lambda: message_row().state == MessageState.PARKED, "the message to be parked", log)
    job = ExportJob.objects.get(pk=job_id)
    assert job.state == JobState.FAILED and "worker was lost" in job.error
    assert message_row().attempts == 3
    assert worker.poll() is None, "the worker itself survives its pool processes"
    parked = client_for(organizer).get("/api/v1/background-work/?state=parked").json()["results"]
    assert [row["task_name"] for row in parked] == [EXPORT]


def test_celery_acknowledges_late_hands_back_lost_work_and_outwaits_the_longest_task():
    from config.celery import app

    conf = app.conf
    assert conf.task_acks_late and conf.task_reject_on_worker_lost
    assert conf.broker_transport_options["visibility_timeout"] > conf.task_time_limit
    assert "outbox.tasks.relay" in {entry["task"] for entry in conf.beat_schedule.values()}


@pytest.mark.django_db
def test_scoring_that_fails_every_attempt_fails_its_submission_with_the_reason(
    organizer, django_capture_on_commit_callbacks, monkeypatch
):
    from benchmark.models import Challenge, SplitVersion, Submission, SubmissionState, Team

    dataset = factories.DatasetFactory(organizers=[organizer])
    version = SplitVersion.objects.create(dataset=dataset, number=1, seed=0, ratios={}, manifest={})
    challenge = Challenge.objects.create(name="det", dataset=dataset, split_version=version, protocol="coco")
    submission = Submission.objects.create(team=Team.objects.create(challenge=challenge, name="t"))

    def broken(submission_id):
        raise OSError("scratch disk gone")

    monkeypatch.setattr("benchmark.challenges.submission_score", broken)
    with django_capture_on_commit_callbacks(execute=True):
        outbox.message_enqueue("benchmark.tasks.submission_score", (submission.pk,), dataset_id=dataset.pk)
    submission.refresh_from_db()
    assert submission.state == SubmissionState.FAILED and "scratch disk gone" in submission.errors[0]
    assert Message.objects.get().state == MessageState.PARKED
