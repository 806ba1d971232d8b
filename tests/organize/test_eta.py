"""organize.eta: the time left at the recent rate (pure)."""

import pytest

from organize.eta import eta_from_rate


def test_the_eta_is_the_remaining_work_at_the_recent_rate():
    eta = eta_from_rate(remaining=90, finished_recently=30, window_seconds=900)
    assert eta.seconds == pytest.approx(2700)
    assert eta.rate_per_hour == pytest.approx(120)


def test_no_recent_progress_gives_no_eta_and_nothing_left_gives_zero():
    assert eta_from_rate(remaining=5, finished_recently=0, window_seconds=900).seconds is None
    assert eta_from_rate(remaining=0, finished_recently=0, window_seconds=900).seconds == 0.0


def test_the_window_must_be_positive():
    with pytest.raises(ValueError):
        eta_from_rate(1, 1, 0)
