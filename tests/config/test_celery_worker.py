"""Celery end to end: a real worker process takes a task from a real broker and changes the test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
import redis
from celery import Celery
from django.db import connection
from django.utils import timezone

from annotation.models import Assignment, AssignmentState, TaskState
from config.celery import app
from tests import factories

REPO_ROOT = Path(__file__).resolve().parents[2]
BROKER_URL = os.environ.get("CROWDLABEL_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
RESULT_URL = os.environ.get("CROWDLABEL_TEST_RESULT_URL", "redis://127.0.0.1:6379/14")
QUEUES = "default,consensus,exports,mturk"
READY_TIMEOUT = 120.0  # a bound for a slow, loaded machine: a ready worker ends the wait at once


def test_tasks_route_to_their_named_queues():
    router = app.amqp.router
    assert router.route({}, "consensus.tasks.calibration_rebuild")["queue"].name == "consensus"
    assert router.route({}, "benchmark.tasks.export_run")["queue"].name == "exports"
    assert router.route({}, "crowd.mturk.tasks.hits_sync")["queue"].name == "mturk"
    assert router.route({}, "annotation.tasks.leases_expire")["queue"].name == "default"


def database_url_of_the_test_database() -> str:
    s = connection.settings_dict
    auth = quote(s["USER"] or "", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"], safe="")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def wait_until_ready(process: subprocess.Popen, log: Path, node: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the worker exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        if f"{node} ready." in log.read_text():
            return
        time.sleep(0.2)
    pytest.fail(f"the worker was not ready after {READY_TIMEOUT:.0f} s:\n{log.read_text()[-3000:]}")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)  # warm shutdown: finish the current task, then leave
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@pytest.fixture
def celery_worker(tmp_path):
    """`celery -A config worker` on every named queue, as a separate process on the test database.

    A run-specific broker key prefix keeps this worker and the test's messages apart from any other run
    sharing the same Redis database."""
    prefix = f"crowdlabel-test-{uuid.uuid4().hex[:12]}:"
    node = f"{prefix.rstrip(':')}@localhost"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url_of_the_test_database(),
        "DB_CONN_MAX_AGE": "0",
        "CELERY_BROKER_URL": BROKER_URL,
        "CELERY_BROKER_KEY_PREFIX": prefix,
        "CELERY_RESULT_BACKEND": RESULT_URL,
        "CROWDLABEL_MEDIA_ROOT": str(tmp_path / "media"),
    }
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", QUEUES, "-n", node]
            + ["--pool", "solo", "--concurrency", "1", "--loglevel", "INFO"]
            + ["--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until_ready(process, log, node)
        yield prefix, log
    finally:
        stop(process)
        forget_keys(prefix)


def forget_keys(prefix: str) -> None:
    """Drop this run's queues and bindings from the shared Redis database."""
    client = redis.Redis.from_url(BROKER_URL)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.mark.broker
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_worker_process_expires_leases_sent_through_the_broker(celery_worker, settings):
    prefix, log = celery_worker
    # Not eager: the message must go through the broker to the worker process.
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = BROKER_URL
    settings.CELERY_RESULT_BACKEND = RESULT_URL
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"global_keyprefix": prefix}

    worker = factories.user_with_roles("ann", ("workers",)).worker
    past = timezone.now() - timedelta(minutes=5)
    expired = factories.TaskFactory(state=TaskState.LEASED, lease_expires_at=past)
    Assignment.objects.create(task=expired, worker=worker, state=AssignmentState.LEASED, expires_at=past)
    live = factories.TaskFactory(state=TaskState.LEASED, lease_expires_at=timezone.now() + timedelta(hours=1))

    client = Celery("crowdlabel-test-client", set_as_current=False)
    client.config_from_object("django.conf:settings", namespace="CELERY")
    assert client.conf.task_always_eager is False
    try:
        result = client.send_task("annotation.tasks.leases_expire")
        assert result.get(timeout=120) == 1, log.read_text()[-3000:]
        result.forget()
    finally:
        client.close()

    expired.refresh_from_db()
    live.refresh_from_db()
    assert expired.state == TaskState.OPEN and expired.lease_expires_at is None
    assert Assignment.objects.get(task=expired).state == AssignmentState.EXPIRED
    assert live.state == TaskState.LEASED
    assert "annotation.tasks.leases_expire" in log.read_text() and "succeeded" in log.read_text()
