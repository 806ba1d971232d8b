"""`make run` installs only what serving needs; `make test` adds the development requirements (issue 34: serving
pulled in about 400 MB of test and interop packages). Checked on the Makefile's own plan (`make -n`)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.config.conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def plan(target: str, venv) -> list[str]:
    done = subprocess.run(
        ["make", "-n", target, f"VENV={venv}"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def installs(lines: list[str]) -> list[str]:
    return [line.split(" -r ", 1)[1] for line in lines if "pip install" in line and " -r " in line]


def test_make_run_installs_the_runtime_requirements_only(tmp_path):
    lines = plan("run", tmp_path / "venv")
    assert installs(lines) == ["requirements.txt"]
    assert f"touch {tmp_path / 'venv'}/.installed-runtime" in lines
    assert any(line.endswith("manage.py runserver 127.0.0.1:8000") for line in lines)


def test_make_test_installs_the_development_requirements(tmp_path):
    lines = plan("test", tmp_path / "venv")
    assert installs(lines) == ["requirements-dev.txt"]
    assert f"touch {tmp_path / 'venv'}/.installed" in lines


def test_an_installed_environment_is_not_installed_again(tmp_path):
    venv = tmp_path / "venv"
    venv.mkdir()
    for stamp in (".installed-runtime", ".installed"):
        (venv / stamp).touch()  # newer than the requirement files
    assert installs(plan("run", venv)) == [] and installs(plan("test", venv)) == []
