"""Running manage.py and python in subprocesses with a controlled environment, as a deployment would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# Anything the platform reads from the environment; a subprocess starts with none of it unless a test says so.
OWN_PREFIXES = ("DJANGO_", "DATABASE_URL", "DB_", "CELERY_", "AWS_", "CROWDLABEL_")


def clean_env(var_dir: Path, **overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(OWN_PREFIXES)}
    env["CROWDLABEL_VAR_DIR"] = str(var_dir)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(overrides)
    return env


def run(args: list[str], env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def var_dir(tmp_path) -> Path:
    path = tmp_path / "var"
    path.mkdir()
    return path
