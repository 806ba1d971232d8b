"""CPU seconds spent by a server's process tree, read from Linux's /proc: the benches use it to say how much CPU
one task cycle costs the application (gunicorn's master and workers) and the database (PostgreSQL's postmaster
and backends), which is what decides how many cycles a machine of N cores can carry.

A tree's CPU is its root's own user + system time, the user + system time of its live children, and the times
of its children that have exited and been waited for (the root's cutime/cstime). The difference of two readings
is the CPU the tree spent in between, including children that started or exited meanwhile. Where /proc cannot
be read (not Linux, or PostgreSQL on another host) the readings are None and the bench prints no figure.
PostgreSQL's tree is the whole server's: another database's backends, autovacuum and checkpoints count too, so
its figure is the bench's own only on a server nothing else uses meanwhile.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces; the fields after it are plain.
    return text.rsplit(")", 1)[1].split()


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process so far (OSError when it is gone)."""
    fields = _stat_fields(pid)
    if fields is None:
        raise ProcessLookupError(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(root_pid: int | None) -> float | None:
    """CPU seconds (user + system) of `root_pid`, its live children and its exited, waited-for children."""
    if root_pid is None:
        return None
    root = _stat_fields(root_pid)
    if root is None:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    # After the ")": state is index 0, ppid 1, ..., utime 11, stime 12, cutime 13, cstime 14 (proc(5)).
    ticks = sum(int(v) for v in root[11:15])
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None and int(fields[1]) == root_pid:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / tick


def postmaster_pid(cursor) -> int | None:
    """The local PostgreSQL server's postmaster, from its data directory's postmaster.pid; None when the file
    cannot be read (a server on another host, or no permission)."""
    cursor.execute("SELECT setting FROM pg_settings WHERE name = 'data_directory'")
    (data_directory,) = cursor.fetchone()
    try:
        first_line = (Path(data_directory) / "postmaster.pid").read_text().split("\n", 1)[0]
    except OSError:
        return None
    pid = int(first_line)
    return pid if _stat_fields(pid) is not None else None
