"""Running test code in worker threads, each with its own database connection (PostgreSQL concurrency tests)."""

from __future__ import annotations

from django.db import connections


def in_thread(fn):
    """Wrap `fn` so the thread closes its own database connections when it ends: otherwise PostgreSQL keeps
    them open and refuses to drop the test database."""

    def wrapped(*args):
        try:
            return fn(*args)
        finally:
            connections.close_all()

    return wrapped
