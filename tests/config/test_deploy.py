"""deploy/: the compose file, .env.example and the Dockerfile agree with what the project reads
(deploy/check.py), and the checker finds what a broken copy gets wrong."""

from __future__ import annotations

import copy
import importlib.util
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from config.secret_key import secret_key_problem

REPO_ROOT = Path(__file__).resolve().parents[2]
DEPLOY = REPO_ROOT / "deploy"


def load_check():
    spec = importlib.util.spec_from_file_location("deploy_check", DEPLOY / "check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


check = load_check()


def files() -> dict:
    return {
        "compose": yaml.safe_load((DEPLOY / "compose.yaml").read_text()),
        "env_example": check.env_file((DEPLOY / ".env.example").read_text()),
        "dockerfile": (DEPLOY / "Dockerfile").read_text(),
        "reads": check.settings_reads(REPO_ROOT / "config"),
        "documented": check.documented_names((REPO_ROOT / "docs" / "deployment.md").read_text()),
        "queues": {queue.name for queue in settings.CELERY_TASK_QUEUES},
        "moto_version": version("moto"),
        "dockerignore": (DEPLOY / "Dockerfile.dockerignore").read_text(),
    }


def test_the_deploy_files_agree_with_the_settings_and_docs():
    assert check.problems(**files()) == []


def test_the_settings_reader_finds_literal_and_built_names():
    reads = check.settings_reads(REPO_ROOT / "config")
    assert {
        "DATABASE_URL",
        "DJANGO_SECRET_KEY",
        "AWS_STORAGE_BUCKET_NAME",
        "DB_POOL",
        "DB_CONN_MAX_AGE",
    } <= reads.names
    assert "CROWDLABEL_THROTTLE_WORKER" in reads  # f"CROWDLABEL_THROTTLE_{scope.upper()}"
    assert "CROWDLABEL_NOT_A_SETTING" not in reads


def test_every_queue_a_task_is_routed_to_is_consumed_by_the_worker_service():
    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()} | {
        settings.CELERY_TASK_DEFAULT_QUEUE
    }
    worker = files()["compose"]["services"]["worker"]["command"]
    assert set(worker[worker.index("-Q") + 1].split(",")) == routed


def test_the_example_environment_starts_nothing_with_its_secret_key():
    assert secret_key_problem(files()["env_example"]["DJANGO_SECRET_KEY"])


def test_every_required_variable_resolves_from_the_example_environment():
    given = files()
    web = given["compose"]["services"]["web"]["environment"]
    resolved = {name: check.interpolate(value, given["env_example"]) for name, value in web.items()}
    assert resolved["DATABASE_URL"] == "postgres://crowdlabel:replace-me@db:5432/crowdlabel"
    with pytest.raises(KeyError, match="DJANGO_SECRET_KEY"):
        check.interpolate(web["DJANGO_SECRET_KEY"], {})


def broken(change) -> list[str]:
    given = copy.deepcopy(files())
    change(given)
    return check.problems(**given)


def services(given: dict) -> dict:
    return given["compose"]["services"]


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (
            lambda g: services(g)["web"]["environment"].update(CROWDLABEL_MADE_UP="1"),
            "CROWDLABEL_MADE_UP is neither",
        ),
        (lambda g: services(g).pop("beat"), "no `beat` service"),
        (
            lambda g: services(g)["worker"]["command"].__setitem__(5, "default,consensus"),
            "worker: -Q must name",
        ),
        (lambda g: services(g)["redis"].pop("healthcheck"), "redis: no healthcheck"),
        (lambda g: services(g)["web"]["healthcheck"].update(timeout="30s"), "timeout must be shorter"),
        (lambda g: services(g)["web"].update(ports=["8000:8000"]), "on 127.0.0.1 only"),
        (lambda g: services(g)["web"]["command"].__setitem__(3, "0.0.0.0:9000"), "published ports"),
        (lambda g: services(g)["web"]["command"].extend(["-c", "other.py"]), "no --config"),
        (lambda g: services(g)["web"]["depends_on"].pop("migrate"), "web: must start after migrate"),
        (lambda g: services(g)["migrate"].update(restart="always"), "must not restart"),
        (lambda g: services(g)["beat"].update(deploy={"replicas": 2}), "exactly one replica"),
        (lambda g: g["env_example"].pop("POSTGRES_PASSWORD"), "${POSTGRES_PASSWORD} is not listed"),
        (lambda g: g["env_example"].update(UNUSED_THING="x"), "UNUSED_THING is not used"),
        (lambda g: g["env_example"].update(POSTGRES_PASSWORD="hunter2hunter2"), "must hold the placeholder"),
        (
            lambda g: services(g)["db"]["environment"].update(POSTGRES_PASSWORD="${POSTGRES_PASSWORD:-x}"),
            "must be required",
        ),
        (lambda g: g["compose"].update(version="3.8"), "`version` is obsolete"),
        (lambda g: g.update(dockerfile=g["dockerfile"].replace("collectstatic", "check")), "collectstatic"),
        (lambda g: g.update(dockerfile="FROM python:3.12\n" + g["dockerfile"]), "FROM python:3.11-slim"),
        (lambda g: g.update(dockerfile=g["dockerfile"] + "\nENV MADE_UP_SETTING=1\n"), "ENV MADE_UP_SETTING"),
        (lambda g: g.update(dockerignore="gunicorn.conf.py\n"), "gunicorn.conf.py must reach the image"),
        (lambda g: g.update(moto_version="6.0.0"), "moto major version"),
    ],
)
def test_the_checker_names_what_a_broken_copy_gets_wrong(change, complaint):
    assert any(complaint in problem for problem in broken(change)), broken(change)
