"""Celery's time limits from the one setting an operator gives (CROWDLABEL_TASK_TIME_LIMIT_SECONDS). Pure."""

from __future__ import annotations

# The soft limit comes this share of the hard one early, but never more than a minute early: long enough for a
# task to clean up after SoftTimeLimitExceeded, short enough that a small limit still leaves the task its time.
SOFT_SHARE = 0.1
SOFT_MARGIN_CAP_SECONDS = 60.0


def soft_time_limit(hard: float) -> float:
    """The soft time limit for a hard one: 1800 -> 1740, 600 -> 540, 60 -> 54, 10 -> 9 (seconds)."""
    if hard <= 0:
        raise ValueError(f"a time limit must be positive, got {hard}")
    return hard - min(SOFT_MARGIN_CAP_SECONDS, hard * SOFT_SHARE)
