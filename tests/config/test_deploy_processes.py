"""The compose topology started as local processes, without Docker: the very commands of deploy/compose.yaml's
services (s3-bucket, migrate, the image's collectstatic, gunicorn, the Celery worker and beat) with the
environment its application services get, resolved from deploy/.env.example. Only the endpoints are this
machine's: the test database, the test Redis database, moto's S3 server on loopback. Then the web and worker
healthchecks pass, an image uploaded through gunicorn lands in the bucket, an export run by the worker is written
to the bucket, and beat's schedule reaches the worker."""

from __future__ import annotations

import io
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import requests
import yaml

from annotation.models import Box, BoxState, Image
from crowd.services import token_for
from tests import factories
from tests.benchmark.conftest import finalize
from tests.config.test_celery_worker import BROKER_URL, database_url_of_the_test_database, forget_keys
from tests.config.test_deploy import DEPLOY, REPO_ROOT, check
from tests.conftest import png_bytes
from tests.faults.conftest import closed_port
from tests.s3_fixtures import s3_client
from tests.waiting import wait_until

# About a minute on this shared machine (four Django starts, gunicorn with 4 workers, a Celery worker): behind its
# marker, run by `make deploy-check` in .ci/run after the soak rather than in every `make test`.
pytestmark = [
    pytest.mark.deploy,
    pytest.mark.postgres,
    pytest.mark.broker,
    pytest.mark.django_db(transaction=True),
]


def compose_files() -> tuple[dict, dict[str, str]]:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return compose["services"], check.env_file((DEPLOY / ".env.example").read_text())


def replaced(command: list[str], flag: str, value: str) -> list[str]:
    index = command.index(flag)
    return [*command[: index + 1], value, *command[index + 2 :]]


class Topology:
    """The compose services as processes on this machine."""

    def __init__(self, tmp_path: Path, s3_endpoint: str):
        self.services, example = compose_files()
        self.tmp = tmp_path
        self.port = closed_port()
        self.prefix = f"crowdlabel-deploy-{uuid.uuid4().hex[:12]}"
        self.bucket = f"{example['AWS_STORAGE_BUCKET_NAME']}-{uuid.uuid4().hex[:8]}"
        app_env = {
            name: check.interpolate(value, example)
            for name, value in self.services["web"]["environment"].items()
        }
        # This machine's endpoints in place of the compose network's; every other value is the compose file's.
        local = {
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(
                64
            ),  # the example's placeholder is refused, on purpose
            "DATABASE_URL": database_url_of_the_test_database(),
            "CELERY_BROKER_URL": BROKER_URL,
            "CROWDLABEL_CACHE_URL": BROKER_URL,
            "AWS_S3_ENDPOINT_URL": s3_endpoint,
            "AWS_STORAGE_BUCKET_NAME": self.bucket,
        }
        assert set(local) <= set(app_env), "only the compose file's own variables are pointed elsewhere"
        self.env = {
            **os.environ,
            **app_env,
            **local,
            # Beside them: the image's directories (its Dockerfile ENV), a key prefix that keeps this run's
            # messages apart from others sharing the Redis database, and beat's relay every second, so that
            # its first send shows within the test.
            "CROWDLABEL_VAR_DIR": str(tmp_path / "var"),
            "CROWDLABEL_STATIC_ROOT": str(tmp_path / "static"),
            "CELERY_BROKER_KEY_PREFIX": f"{self.prefix}:",
            "CROWDLABEL_OUTBOX_RELAY_SECONDS": "1",
            "HOSTNAME": self.prefix,  # the worker's node name is celery@$HOSTNAME, as in its container
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        self.host = app_env["DJANGO_ALLOWED_HOSTS"].split(",")[0]
        self.procs: dict[str, subprocess.Popen] = {}

    def log(self, name: str) -> Path:
        return self.tmp / f"{name}.log"

    def run_once(self, command: list[str]) -> str:
        done = subprocess.run(
            command, cwd=REPO_ROOT, env=self.env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, (
            f"{shlex.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
        )
        return done.stdout

    def start(self, name: str, command: list[str]) -> None:
        with self.log(name).open("wb") as out:
            self.procs[name] = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def command(self, name: str) -> list[str]:
        command = list(self.services[name]["command"])
        if name == "web":
            return replaced(command, "--bind", f"127.0.0.1:{self.port}")
        if name == "worker":
            return [*command, "-n", f"celery@{self.prefix}"]
        if name == "beat":
            return replaced(command, "--schedule", str(self.tmp / "celerybeat-schedule"))
        return command

    def healthcheck(self, name: str) -> int:
        test = self.services[name]["healthcheck"]["test"]
        if test[0] == "CMD-SHELL":
            command = ["sh", "-c", test[1].replace("$$", "$")]
        else:
            command = test[1:]
        if name == "web":
            command = [*command[:-1], str(self.port)]
        return subprocess.run(
            command, cwd=REPO_ROOT, env=self.env, capture_output=True, timeout=120
        ).returncode

    def tail(self, name: str) -> str:
        return self.log(name).read_text(errors="replace")[-3000:]

    def call(self, method: str, path: str, token: str | None = None, **kwargs) -> requests.Response:
        headers = {"Host": self.host, "X-Forwarded-Proto": "https"}  # as the TLS proxy sends them
        if token:
            headers["Authorization"] = f"Token {token}"
        return requests.request(
            method,
            f"http://127.0.0.1:{self.port}{path}",
            headers=headers,
            allow_redirects=False,
            timeout=60,
            **kwargs,
        )

    def stop_all(self) -> None:
        for proc in reversed(list(self.procs.values())):  # web first, the worker last
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
        forget_keys(self.prefix)


@pytest.fixture
def topology(tmp_path, s3_endpoint):
    platform = Topology(tmp_path, s3_endpoint)
    try:
        yield platform
    finally:
        platform.stop_all()


def test_the_compose_services_commands_serve_store_in_s3_and_run_background_work(
    topology, organizer, dataset
):
    # The one-shot services, in compose's order, and the image's collectstatic.
    assert f"bucket {topology.bucket} created" in topology.run_once(topology.command("s3-bucket"))
    topology.run_once(topology.command("migrate"))
    topology.run_once(["python", "manage.py", "collectstatic", "--noinput"])
    for name in ("worker", "beat", "web"):
        topology.start(name, topology.command(name))

    wait_until(
        lambda: topology.healthcheck("web") == 0, "the web healthcheck", detail=lambda: topology.tail("web")
    )
    page = topology.call("GET", "/accounts/login/")
    assert page.status_code == 200 and re.search(r"/static/frontend/style\.[0-9a-f]{12}\.css", page.text)

    token = token_for(organizer)
    upload = topology.call(
        "POST",
        f"/api/v1/datasets/{dataset.pk}/images/",
        token,
        files={"files": ("photo.png", io.BytesIO(png_bytes(size=(80, 60), seed=1)), "image/png")},
    )
    assert upload.status_code == 201, upload.text
    image = Image.objects.get(dataset=dataset)
    stored = s3_client(topology.env["AWS_S3_ENDPOINT_URL"]).get_object(
        Bucket=topology.bucket, Key=image.file.name
    )
    assert stored["Body"].read() == png_bytes(size=(80, 60), seed=1)

    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    Box.objects.create(image=image, concept=dog, x1=5, y1=5, x2=40, y2=30, state=BoxState.ACCEPTED)
    finalize(dataset)
    job = topology.call(
        "POST",
        f"/api/v1/datasets/{dataset.pk}/exports/",
        token,
        json={"format": "coco", "split": "all", "include_images": True},
    )
    assert job.status_code == 201, job.text

    def export_done():
        state = topology.call("GET", f"/api/v1/exports/{job.json()['id']}/", token).json()["state"]
        assert state != "failed", topology.tail("worker")
        return state == "done"

    wait_until(export_done, "the worker to run the export", detail=lambda: topology.tail("worker"))
    listed = s3_client(topology.env["AWS_S3_ENDPOINT_URL"]).list_objects_v2(
        Bucket=topology.bucket, Prefix="exports/"
    )
    assert [o["Key"] for o in listed.get("Contents", [])], "the export archive is in the bucket"
    download = topology.call("GET", f"/api/v1/exports/{job.json()['id']}/file", token)
    assert download.status_code == 302 and download.headers["Location"].startswith(
        topology.env["AWS_S3_ENDPOINT_URL"]
    )

    assert topology.healthcheck("worker") == 0, topology.tail("worker")
    wait_until(
        lambda: "outbox.tasks.relay" in topology.log("worker").read_text(errors="replace"),
        "beat's schedule to reach the worker",
        detail=lambda: topology.tail("beat"),
    )
    assert all(proc.poll() is None for proc in topology.procs.values()), {
        name: topology.tail(name) for name, proc in topology.procs.items() if proc.poll() is not None
    }
