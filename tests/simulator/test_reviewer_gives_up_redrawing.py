"""The simulated reviewer closes a box job the crowd could not finish after being sent back twice, as a person
does when the crowd cannot find what is missing; other decisions pass through unchanged. No database."""

from __future__ import annotations

import numpy as np

from simulator.scenarios.finishing import REDRAWS_BEFORE_CLOSE, Finisher

CHOICES = ("accept", "redraw", "close", "absent")


def finisher() -> Finisher:
    return Finisher(None, None, lambda item: None, np.random.default_rng(0))


def job_item(job_id: int) -> dict:
    return {"id": 100 + job_id, "kind": "ambiguous", "subject": {"type": "box_job", "id": job_id}}


def test_a_job_sent_back_twice_is_closed_the_third_time_and_counted():
    f = finisher()
    decisions = [
        f._give_up_redrawing(job_item(7), "redraw", CHOICES) for _ in range(REDRAWS_BEFORE_CLOSE + 2)
    ]
    assert decisions == ["redraw"] * REDRAWS_BEFORE_CLOSE + ["close", "close"]
    assert f.summary()["closed_after_redraws"] == 2
    assert f._give_up_redrawing(job_item(8), "redraw", CHOICES) == "redraw"  # another job starts afresh


def test_other_decisions_and_other_items_are_left_alone():
    f = finisher()
    for _ in range(5):
        assert f._give_up_redrawing(job_item(7), "accept", CHOICES) == "accept"
    pair = {"id": 1, "kind": "duplicate", "subject": None}
    for _ in range(5):
        assert f._give_up_redrawing(pair, "redraw", CHOICES) == "redraw"
    no_close = ("accept", "redraw")
    for _ in range(5):
        assert f._give_up_redrawing(job_item(9), "redraw", no_close) == "redraw"
    assert f.summary()["closed_after_redraws"] == 0
