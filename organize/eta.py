"""Time left for a stage from its recent rate: pure arithmetic, no Django."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Eta:
    seconds: float | None  # None: no recent progress to extrapolate from (or nothing left: 0.0)
    rate_per_hour: float


def eta_from_rate(remaining: int, finished_recently: int, window_seconds: float) -> Eta:
    """Remaining units at the rate of the last `window_seconds` (ILSVRC-style crowds work in bursts, so a
    short recent window follows the crowd better than the average since the start)."""
    if window_seconds <= 0:
        raise ValueError("the window must be positive")
    rate = finished_recently / window_seconds
    if remaining <= 0:
        return Eta(0.0, rate * 3600)
    if rate == 0:
        return Eta(None, 0.0)
    return Eta(remaining / rate, rate * 3600)
