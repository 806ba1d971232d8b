"""Waiting in tests for a condition, never for a fixed time: poll until it holds, bounded generously so that only
a condition that never comes fails the test (a slow, loaded machine waits longer instead of failing)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest
from django.db.utils import OperationalError

T = TypeVar("T")

# A bound, not a budget: reached only when the condition never comes.
GENEROUS_SECONDS = 120.0


def wait_until(
    condition: Callable[[], T],
    what: str,
    *,
    timeout: float = GENEROUS_SECONDS,
    interval: float = 0.1,
    sleep: Callable[[float], object] = time.sleep,
    detail: Callable[[], str] | None = None,
) -> T:
    """The condition's first true value; fails the test naming `what` if none came within `timeout` seconds.
    `sleep` may be a browser page's own wait (`lambda s: page.wait_for_timeout(s * 1000)`) so that its events
    keep arriving meanwhile; `detail` adds what to show on failure (a log's tail)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"not within {timeout:.0f} s: {what}" + (f"\n{detail()}" if detail else ""))
        sleep(interval)


def when_idle(read: Callable[[], T], timeout: float = GENEROUS_SECONDS) -> T:
    """Run these database reads, retried should the database refuse them while a browser page's background
    requests write (SQLite's test database waits its timeout for a lock, so mostly it does not); a loaded machine
    may keep it busy for a while, so the bound is generous."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return read()
        except OperationalError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.1)
