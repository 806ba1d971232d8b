"""Running test code in worker threads, each with its own database connection (PostgreSQL concurrency tests)."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connections

from tests.config.test_celery_worker import database_url_of_the_test_database
from tests.waiting import GENEROUS_SECONDS, wait_until


def in_thread(fn):
    """Wrap `fn` so the thread closes its own database connections when it ends: otherwise PostgreSQL keeps
    them open and refuses to drop the test database."""

    def wrapped(*args):
        try:
            return fn(*args)
        finally:
            connections.close_all()

    return wrapped


def lock_waiters() -> int:
    """How many backends of the test database wait on a lock now (PostgreSQL)."""
    with psycopg.connect(database_url_of_the_test_database(), autocommit=True) as admin:
        return admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()[0]


def a_lock_is_awaited(timeout: float = GENEROUS_SECONDS, *, or_else=lambda: False) -> bool:
    """Whether, within `timeout` seconds, some backend of the test database waits on a lock (or `or_else()`
    holds): what a test holding a row shows before it lets go, instead of sleeping and hoping the other
    transaction got there meanwhile (on a loaded machine it may not have, and the race would go untested)."""
    try:
        wait_until(lambda: or_else() or lock_waiters(), "a transaction to wait on a lock", timeout=timeout)
    except pytest.fail.Exception:
        return False
    return True
