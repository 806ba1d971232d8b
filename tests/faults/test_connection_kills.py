"""Killed database connections (issue 18, item 7): PostgreSQL backends terminated under load by
pg_terminate_backend give no 5xx once the kills stop (health checks replace dead persistent connections; a read
that loses its connection is run again, and so is a write that had committed nothing), writes that had
committed part of their work answer 503, and every task's
counters agree with its stored answers afterwards."""

from __future__ import annotations

import http.client
import io
import json
import os
import subprocess
import sys
import threading
import time
import uuid

import psycopg
import pytest
from django.db import connection

from annotation.models import Assignment, AssignmentState, Dataset, Image, Task, TaskState
from config.roles import WORKERS
from consensus import binary_vote
from crowd.services import token_for, user_create
from hierarchy.models import Concept
from tests import factories
from tests.conftest import client_for
from tests.faults.conftest import closed_port
from tests.waiting import wait_until

from .conftest import REPO_ROOT, database_url_of_the_test_database

HOST = "127.0.0.1"
pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def backends(application_name: str) -> set[int]:
    """The pids of that application's live backends (never this test's own connections)."""
    with psycopg.connect(database_url_of_the_test_database(), autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND pid <> pg_backend_pid()",
            (application_name,),
        ).fetchall()
    return {pid for (pid,) in rows}


def terminate(application_name: str) -> set[int]:
    """pg_terminate_backend on every backend of that application (never this test's own connections): the pids
    it was sent to."""
    with psycopg.connect(database_url_of_the_test_database(), autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND pid <> pg_backend_pid()",
            (application_name,),
        ).fetchall()
    return {pid for pid, killed in rows if killed}


def own_backend_killed() -> None:
    """Terminate the test's own Django connection from another one, as a server restart would."""
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    with psycopg.connect(database_url_of_the_test_database(), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    time.sleep(0.05)


def test_a_read_whose_connection_was_killed_is_answered_on_a_fresh_one(organizer):
    factories.DatasetFactory(organizers=[organizer])
    client = client_for(organizer)
    assert client.get("/api/v1/datasets/").status_code == 200
    own_backend_killed()
    response = client.get("/api/v1/datasets/")
    assert response.status_code == 200 and response.json()["count"] == 1


def test_a_write_that_committed_nothing_before_its_connection_was_killed_is_run_again_once(organizer):
    """Nothing it did was kept, so the server runs it again on a fresh connection (what the client's retry
    would do) instead of answering 503: the organizer's POST, like a submit, is answered as usual."""
    client = client_for(organizer)
    assert client.get("/api/v1/datasets/").status_code == 200
    own_backend_killed()
    response = client.post("/api/v1/datasets/", {"name": "after-the-kill"}, format="json")
    assert response.status_code == 201, response.content
    assert Dataset.objects.filter(name="after-the-kill").count() == 1


def test_a_write_that_committed_part_of_its_work_before_its_connection_was_killed_answers_503(
    organizer, monkeypatch
):
    """A write whose first statement committed (outside a transaction) and whose connection was then lost is
    not run again (that would do the committed part twice): 503, as before, with what it committed kept."""
    from annotation.api import DatasetViewSet

    def create_then_lose_the_connection(self, serializer):
        dataset = serializer.save()  # committed (no transaction around it)
        own_backend_killed()
        dataset.organizers.add(self.request.user)

    monkeypatch.setattr(DatasetViewSet, "perform_create", create_then_lose_the_connection)
    client = client_for(organizer)
    assert client.get("/api/v1/datasets/").status_code == 200
    response = client.post("/api/v1/datasets/", {"name": "half"}, format="json")
    assert response.status_code == 503 and response["Retry-After"] == "1"
    assert Dataset.objects.filter(name="half").count() == 1


def test_a_submit_whose_connection_was_killed_is_run_again_with_its_key_and_stored_once():
    """A submit carries its Idempotency-Key, so running it again is what the client's retry would do: the
    worker gets the answer stored (201), not a 503, and the answer counts once."""
    queue_tasks(1)
    user = user_create(username="killed-submit", password=None, roles=(WORKERS,))
    client = client_for(user)
    lease = client.get("/api/v1/tasks/next")
    assert lease.status_code == 200
    own_backend_killed()
    path = f"/api/v1/assignments/{lease.json()['id']}/submit"
    body = {"answer": {"answer": True}}
    response = client.post(path, body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert response.status_code == 201, response.content
    assert response.json()["state"] == AssignmentState.SUBMITTED
    again = client.post(path, body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert again.status_code == 200 and again.json()["id"] == response.json()["id"]
    assert Assignment.objects.filter(state=AssignmentState.SUBMITTED).count() == 1
    assert Task.objects.get().answers_count == 1


def test_a_submit_losing_its_connection_again_in_its_rerun_is_run_again_until_stored(monkeypatch):
    """Backends killed every few seconds while a slow request runs can kill its rerun too: the server runs it
    again on a fresh connection up to LOST_RETRIES times (it answered 503 after one rerun), and the answer is
    stored once."""
    from annotation import queue

    queue_tasks(1)
    user = user_create(username="killed-twice", password=None, roles=(WORKERS,))
    client = client_for(user)
    lease = client.get("/api/v1/tasks/next")
    assert lease.status_code == 200
    submit, runs = queue.assignment_submit, []

    def killed_in_the_first_two_runs(**kwargs):
        runs.append(1)
        if len(runs) <= 2:
            own_backend_killed()
        return submit(**kwargs)

    monkeypatch.setattr(queue, "assignment_submit", killed_in_the_first_two_runs)
    path = f"/api/v1/assignments/{lease.json()['id']}/submit"
    response = client.post(path, {"answer": {"answer": True}}, format="json", HTTP_IDEMPOTENCY_KEY="k-2")
    assert response.status_code == 201, response.content
    assert len(runs) == 3
    assert Assignment.objects.filter(state=AssignmentState.SUBMITTED).count() == 1
    assert Task.objects.get().answers_count == 1


def test_an_upload_whose_connection_was_lost_before_storing_runs_again_and_stores_each_file_once(organizer):
    """A multipart upload is never read ahead (its files may be large), but it is idempotent by content (a file
    the dataset holds is answered as stored): losing its connection before anything is stored, it runs again on
    a fresh connection and answers 201, not 503 (the 10-minute soak's one 5xx). Past the first file the upload
    takes the next files up on a fresh connection itself (annotation.ingest)."""
    from tests.annotation import imagefiles

    dataset = factories.DatasetFactory(organizers=[organizer])
    client = client_for(organizer)
    assert client.get("/api/v1/datasets/").status_code == 200
    own_backend_killed()
    path = f"/api/v1/datasets/{dataset.pk}/images/"
    upload = io.BytesIO(imagefiles.jpeg(3))
    upload.name = "a.jpg"
    response = client.post(path, {"files": [upload]}, format="multipart")
    assert response.status_code == 201, response.content
    assert Image.objects.filter(dataset=dataset).count() == 1
    again = io.BytesIO(imagefiles.jpeg(3))
    again.name = "a.jpg"
    response = client.post(path, {"files": [again]}, format="multipart")
    assert response.status_code == 200 and response.json()["stored"][0]["already_stored"] is True


# --- under load, through gunicorn ---------------------------------------------------------------------------


def queue_tasks(n: int) -> None:
    dataset = Dataset.objects.create(name="kills")
    concept = Concept.objects.create(wnid="n02084071", name="dog")
    images = Image.objects.bulk_create(
        Image(
            dataset=dataset,
            file=f"k/{i}.jpg",
            original_name=f"{i}.jpg",
            width=50,
            height=40,
            sha256=f"{i:064x}",
            phash="0" * 16,
        )
        for i in range(n)
    )
    binary_vote.vote_tasks_create(dataset=dataset, concept=concept, images=images, answers_wanted=2)


# Persistent connections (the default), or Django's pool (DB_POOL=1): either way, the connections a kill leaves
# dead in each process.
HELD_CONNECTIONS = {
    "persistent": {"DB_CONN_MAX_AGE": "600", "DB_POOL": "0"},
    "pool": {"DB_CONN_MAX_AGE": "0", "DB_POOL": "1", "DB_POOL_MIN_SIZE": "1", "DB_POOL_MAX_SIZE": "2"},
}


def gunicorn(port: int, application_name: str, log, held: str = "persistent") -> subprocess.Popen:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url_of_the_test_database(),
        **HELD_CONNECTIONS[held],
        "PGAPPNAME": application_name,
        "CELERY_BROKER_URL": f"redis://{HOST}:{closed_port()}/0",  # no broker either: nothing may need it
    }
    env.pop("CELERY_BROKER_KEY_PREFIX", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"{HOST}:{port}", "--workers", "2"]
        + ["--log-level", "warning", "--timeout", "60"],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "gunicorn exited before serving"
        try:
            probe = http.client.HTTPConnection(HOST, port, timeout=2)
            probe.request("GET", "/healthz")
            if probe.getresponse().status == 200:
                return process
        except OSError:
            time.sleep(0.2)
    pytest.fail("gunicorn did not serve within 60 s")


class Load:
    """Worker cycles (next task, submit) in threads; every response is kept with when its request started."""

    def __init__(self, port: int, tokens: list[str]):
        self.port = port
        self.tokens = tokens
        self.results: list[tuple[float, str, int]] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(token,)) for token in tokens]

    def request(self, conn, method, path, token, body=None, key=None):
        headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        if key:
            headers["Idempotency-Key"] = key
        started = time.monotonic()
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = conn.getresponse()
        data = response.read()
        self.results.append((started, f"{method} {path.split('/')[3]}", response.status))
        return response.status, data

    def run(self, token: str) -> None:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=30)
        while not self.stop.is_set():
            try:
                status, data = self.request(conn, "GET", "/api/v1/tasks/next", token)
                if status == 200:
                    assignment = json.loads(data)["id"]
                    body = {"answer": {"answer": True}}
                    key = uuid.uuid4().hex
                    path = f"/api/v1/assignments/{assignment}/submit"
                    status, _ = self.request(conn, "POST", path, token, body, key)
                    if status == 503:  # the connection was lost: the same key again, as a client should
                        self.request(conn, "POST", path, token, body, key)
                elif status == 204:
                    time.sleep(0.05)
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection(HOST, self.port, timeout=30)

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)


@pytest.mark.parametrize("held", list(HELD_CONNECTIONS))
def test_backends_killed_under_load_give_no_5xx_after_recovery_and_nothing_half_written(
    tmp_path, capsys, held
):
    queue_tasks(300)
    tokens = [token_for(user_create(username=f"k{i}", password=None, roles=(WORKERS,))) for i in range(4)]
    application = f"crowdlabel-kills-{uuid.uuid4().hex[:8]}"
    port = closed_port()
    with (tmp_path / "gunicorn.log").open("wb") as log:  # read on failure
        server = gunicorn(port, application, log, held)

    def server_log() -> str:
        return (tmp_path / "gunicorn.log").read_text()[-4000:]

    try:
        with Load(port, tokens) as load:
            # Warm: the processes hold their connections (counted, not slept on).
            wait_until(lambda: backends(application), "gunicorn's processes to connect", detail=server_log)
            kills, killed = 0, set()
            for _ in range(30):
                # Each round kills live backends: wait for a process to connect again, however slow.
                wait_until(lambda: backends(application), "a process to connect again", detail=server_log)
                hit = terminate(application)
                kills, killed = kills + len(hit), killed | hit
                time.sleep(0.1)
            # The kills are over once the killed backends are gone; requests started later must all succeed.
            wait_until(lambda: not killed & backends(application), "the killed backends to exit")
            last_kill = time.monotonic()
            # Recovery, under the same load: until enough requests started after the kills have been answered
            # and enough answers are stored, however long a loaded machine takes for them.
            wait_until(
                lambda: (
                    len([r for r in list(load.results) if r[0] > last_kill]) > 20
                    and Assignment.objects.filter(state=AssignmentState.SUBMITTED).count() > 50
                ),
                "the load to go on after the kills",
                detail=server_log,
            )
        # Idle connections (persistent or in the pool) killed between requests: the next request of each process.
        kills += len(terminate(application))
        probes = []
        for token in tokens * 3:
            probe = http.client.HTTPConnection(HOST, port, timeout=30)
            probe.request("GET", "/api/v1/tasks/next", headers={"Authorization": f"Token {token}"})
            probes.append(probe.getresponse().status)
            probe.close()
    finally:
        server.terminate()
        server.wait(timeout=30)

    during = [status for started, _, status in load.results if started <= last_kill]
    after = [(what, status) for started, what, status in load.results if started > last_kill]
    with capsys.disabled():
        print(
            f"\n{held} connections: {kills} backends killed; {len(during)} requests during the kills, "
            f"{sum(s >= 500 for s in during)} answered 5xx ({sum(s == 503 for s in during)} of them 503); "
            f"{len(after)} requests after, {sum(s >= 500 for _, s in after)} 5xx"
        )
    assert kills >= 10, "the kills must have hit live backends"
    assert len(after) > 20, "the load went on after the kills"
    assert [a for a in after if a[1] >= 500] == []
    assert all(status < 500 for status in during if status != 503), (
        "a lost connection is 503, never 500:\n" + (tmp_path / "gunicorn.log").read_text()[-4000:]
    )
    assert all(status in (200, 204) for status in probes), probes

    # Nothing half-written: each task's counter is the number of its submitted answers, and no more than it
    # wanted; every submitted assignment has its answer; a task open for votes has no lease.
    for task in Task.objects.all():
        submitted = Assignment.objects.filter(task=task, state=AssignmentState.SUBMITTED)
        assert task.answers_count == submitted.count() <= task.answers_wanted, task.pk
        assert (task.state == TaskState.DONE) == (task.answers_count == task.answers_wanted), task.pk
    assert not Assignment.objects.filter(state=AssignmentState.SUBMITTED, answer__isnull=True).exists()
    assert Assignment.objects.filter(state=AssignmentState.SUBMITTED).count() > 50


def test_an_export_request_whose_connection_was_lost_after_its_job_committed_answers_that_job(
    organizer, monkeypatch
):
    """An export request is idempotent by content (the same request while its job is queued answers that job), so
    a connection lost after the job committed runs the request again and answers the job (200), instead of the
    503 the 10-minute soak's one 5xx was; one job, one audit entry."""
    from annotation.models import AuditEntry
    from benchmark.models import ExportJob

    dataset = factories.DatasetFactory(organizers=[organizer])
    factories.ImageFactory(dataset=dataset)
    client = client_for(organizer)
    assert client.get("/api/v1/datasets/").status_code == 200
    refresh, calls = ExportJob.refresh_from_db, []

    def lost_after_commit(self, *args, **kwargs):
        calls.append(self.pk)
        if len(calls) == 1:
            own_backend_killed()
        return refresh(self, *args, **kwargs)

    monkeypatch.setattr(ExportJob, "refresh_from_db", lost_after_commit)
    # The job stays queued, as it does in production while a worker has not taken it (here Celery is eager).
    monkeypatch.setattr("benchmark.services.outbox.message_enqueue", lambda *args, **kwargs: None)
    response = client.post(f"/api/v1/datasets/{dataset.pk}/exports/", {"format": "coco"}, format="json")
    assert response.status_code == 200, response.content
    assert ExportJob.objects.filter(dataset=dataset).count() == 1
    assert response.json()["id"] == ExportJob.objects.get(dataset=dataset).pk
    assert AuditEntry.objects.filter(dataset=dataset, action="export.start").count() == 1
