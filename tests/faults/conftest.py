"""Fault injection: the project's Celery app pointed at a broker that is down (a closed port) or at a real one,
and real worker processes the tests can kill."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
from kombu import pools as kombu_pools

from config.celery import app
from tests.config.test_celery_worker import (
    BROKER_URL,
    QUEUES,
    REPO_ROOT,
    database_url_of_the_test_database,
    forget_keys,
    wait_until_ready,
)


def closed_port() -> int:
    """A loopback port nothing listens on: a broker that is down."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def celery_pointed_at(url: str, prefix: str = ""):
    """The app publishes to `url` for real (not eager) until the block ends; pools are dropped both ways so no
    connection to the previous broker is reused."""
    conf = app.conf
    saved = {
        key: conf[key]
        for key in ("task_always_eager", "broker_url", "broker_transport_options", "broker_read_url")
    }
    saved_write = conf.get("broker_write_url")
    options = {**(conf.broker_transport_options or {})}
    if prefix:
        options["global_keyprefix"] = prefix
    conf.update(
        task_always_eager=False,
        broker_url=url,
        broker_read_url=url,
        broker_write_url=url,
        broker_transport_options=options,
    )
    drop_connection_pools()
    try:
        yield
    finally:
        drop_connection_pools()
        conf.update(**saved, broker_write_url=saved_write)


def drop_connection_pools() -> None:
    kombu_pools.reset()  # kombu's process-wide pools, keyed by connection
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def broker_down():
    with celery_pointed_at(f"redis://127.0.0.1:{closed_port()}/0"):
        yield


class Workers:
    """Start `celery -A config worker` processes on the test database and a run-specific key prefix."""

    def __init__(self, tmp_path: Path):
        self.prefix = f"crowdlabel-fault-{uuid.uuid4().hex[:12]}:"
        self.tmp_path = tmp_path
        self.processes: list[subprocess.Popen] = []

    def start(self, *, pool: str = "prefork", env: dict | None = None) -> tuple[subprocess.Popen, Path]:
        n = len(self.processes)
        node = f"{self.prefix.rstrip(':')}-{n}@localhost"
        log = self.tmp_path / f"worker-{n}.log"
        environment = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": database_url_of_the_test_database(),
            "DB_CONN_MAX_AGE": "0",
            "CELERY_BROKER_URL": BROKER_URL,
            "CELERY_BROKER_KEY_PREFIX": self.prefix,
            "CROWDLABEL_MEDIA_ROOT": str(self.tmp_path / "media"),
            **(env or {}),
        }
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", QUEUES, "-n", node]
                + ["--pool", pool, "--concurrency", "1", "--loglevel", "INFO"]
                + ["--without-gossip", "--without-mingle", "--without-heartbeat"],
                cwd=REPO_ROOT,
                env=environment,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: kill -9 takes the pool with it
            )
        self.processes.append(process)
        wait_until_ready(process, log, node)
        return process, log

    def kill_all(self, process: subprocess.Popen) -> None:
        """kill -9 of the main process and its pool, as an out-of-memory killer or a lost machine would."""
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=10)

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=5)
        forget_keys(self.prefix)


def pool_children(process: subprocess.Popen) -> list[int]:
    """Pids of the worker's pool processes (children of its main process)."""
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == process.pid:
            children.append(int(entry.name))
    return children


@pytest.fixture
def workers(tmp_path):
    pool = Workers(tmp_path)
    try:
        yield pool
    finally:
        pool.close()
