"""gunicorn preloads the project (gunicorn.conf.py): its workers are forked from a master that has imported
Django, so a killed worker is replaced without importing the project again. That is only safe while the master
holds no database connection for its children to share: these tests start the real server and look."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from config.roles import WORKERS
from crowd.services import token_for, user_create
from tests.faults.conftest import closed_port
from tests.faults.test_connection_kills import HOST, gunicorn, queue_tasks
from tests.waiting import wait_until

from .conftest import REPO_ROOT, database_url_of_the_test_database


def test_gunicorn_started_from_the_project_root_reads_its_settings_and_preloads_the_project():
    shown = subprocess.run(
        [sys.executable, "-m", "gunicorn", "--print-config", "config.wsgi"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    settings = dict(line.split("=", 1) for line in shown.stdout.splitlines() if "=" in line)
    assert {k.strip(): v.strip() for k, v in settings.items()}["preload_app"] == "True"


def children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def connections_to_port(pid: int, port: int) -> int:
    """The TCP connections process `pid` holds open to `port` (its socket descriptors matched in /proc/net)."""
    fd_dir = Path(f"/proc/{pid}/fd")
    inodes = set()
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    held = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[9] in inodes:
                held += 1
    return held


def get(port: int, path: str, token: str) -> int:
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    try:
        conn.request("GET", path, headers={"Authorization": f"Token {token}"})
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_master_shares_no_database_connection_and_a_killed_worker_is_replaced_by_one_that_serves(
    tmp_path,
):
    queue_tasks(20)
    token = token_for(user_create(username="preload", password=None, roles=(WORKERS,)))
    db_port = urlsplit(database_url_of_the_test_database()).port or 5432
    port = closed_port()
    with (tmp_path / "gunicorn.log").open("wb") as log:
        server = gunicorn(port, "crowdlabel-preload", log)
    try:
        # Enough requests that both workers have opened their persistent connection.
        assert {get(port, "/api/v1/tasks/next", token) for _ in range(8)} <= {200, 204}
        workers = children(server.pid)
        assert len(workers) == 2
        assert sum(connections_to_port(pid, db_port) for pid in workers) >= 1
        assert connections_to_port(server.pid, db_port) == 0, "the master holds no connection to share"

        os.kill(workers[0], signal.SIGKILL)
        wait_until(
            lambda: not set(children(server.pid)) & {workers[0]} and len(children(server.pid)) >= 2,
            "the master to replace the killed worker",
            interval=0.05,
        )
        replaced = set(children(server.pid)) - set(workers)
        assert len(replaced) == 1, "the master forked a new worker"
        assert {get(port, "/api/v1/tasks/next", token) for _ in range(8)} <= {200, 204}
        assert connections_to_port(server.pid, db_port) == 0
    finally:
        server.terminate()
        server.wait(timeout=30)
