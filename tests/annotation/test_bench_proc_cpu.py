"""bench/proc_cpu.py, which bench/queue_throughput.py uses to say what one task cycle costs gunicorn and
PostgreSQL in CPU: a tree's reading counts the CPU of children that ran and exited in between, and of live ones;
the postmaster is found from the database the tests run on when it is local."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from proc_cpu import postmaster_pid, tree_cpu_seconds  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux's /proc")

# A child that spins until its own CPU clock has counted this many seconds, then prints it.
BURN = "import time\nwhile time.process_time() < {s}: pass\nprint(time.process_time())"


def test_an_exited_childs_cpu_is_counted_in_its_parents_tree():
    before = tree_cpu_seconds(os.getpid())
    done = subprocess.run(
        [sys.executable, "-c", BURN.format(s=0.3)], capture_output=True, text=True, check=True
    )
    after = tree_cpu_seconds(os.getpid())
    spent = float(done.stdout)
    assert before is not None and after is not None
    assert after - before >= 0.9 * spent


def test_a_live_childs_cpu_is_counted_and_a_missing_process_reads_none():
    child = subprocess.Popen(
        [sys.executable, "-c", BURN.format(s=0.3) + "\nimport sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        spent = float(child.stdout.readline())  # the child has burnt its CPU and now waits, alive
        assert tree_cpu_seconds(os.getpid()) >= 0.9 * spent
        assert tree_cpu_seconds(child.pid) >= 0.9 * spent
    finally:
        child.communicate("")
    # waited for, the child is gone: its pid reads nothing
    assert tree_cpu_seconds(child.pid) is None
    assert tree_cpu_seconds(None) is None


@pytest.mark.django_db
def test_the_postmaster_is_found_for_a_local_postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")
    with connection.cursor() as cursor:
        pid = postmaster_pid(cursor)
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
    if pid is None:
        pytest.skip("the server's data directory is not readable here (another host or user)")
    parent = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
    assert parent == pid  # this test's own backend is one of the postmaster's children
    assert tree_cpu_seconds(pid) > 0
