"""The platform under gunicorn for the benches: the environment it runs in, a free loopback port, starting it
(waiting until it answers /healthz) and stopping it gracefully."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"  # loopback only: the bench never listens on another interface


def server_env(database_url: str, var_dir: str, **extra: str) -> dict[str, str]:
    """The environment a bench runs the platform in (its own processes and gunicorn's): this process's, with the
    bench's database, production-like settings (no debug), its own var directory, and `extra` on top."""
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_ENV": "development",
        "DJANGO_DEBUG": "0",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "CROWDLABEL_VAR_DIR": var_dir,
        **extra,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def gunicorn_start(
    port: int,
    env: dict[str, str],
    workers: int,
    worker_class: str,
    log,
    threads: int = 1,
    extra_args: tuple[str, ...] = (),
):
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "config.wsgi",
        "--bind",
        f"{HOST}:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        worker_class,
        "--threads",
        str(threads),
        "--log-level",
        "warning",
        *extra_args,
    ]
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=log)
    deadline = time.time() + 90
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with code {process.returncode} before serving")
        try:
            conn = http.client.HTTPConnection(HOST, port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                conn.close()
                return process
        except OSError:
            pass
        time.sleep(0.2)
    gunicorn_stop(process)
    raise RuntimeError("gunicorn did not answer /healthz within 90 s")


def gunicorn_stop(process) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)  # graceful: workers finish their request and exit
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
