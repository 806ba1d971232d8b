"""`simulate verify --gold-rate`: the organizer seeds gold through the API and the summary reports its cost."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

from .test_driver import run_simulate


@pytest.mark.django_db
def test_gold_rate_seeds_gold_through_the_api_and_reports_blocks():
    summary = run_simulate(
        scenario="verify",
        images=20,
        workers=4,
        seed=2,
        synsets=3,
        spammers=0.25,
        gold_rate=0.3,
        image_size="48x48",
    )
    # 4 gold items: fewer than the qualification size, so gold is only embedded, at the rate
    assert summary["gold_items"] == 4 and summary["images"] == 16
    assert 0.0 < summary["gold_share"] < 0.6
    assert summary["spammers"] == 1
    assert summary["blocked_spammers"] + summary["blocked_honest"] <= 4
    assert summary["submit_errors"] == 0


def test_gold_rate_needs_consensus_questions():
    with pytest.raises(CommandError, match="gold-rate"):
        run_simulate(scenario="verify", consensus="majority3", gold_rate=0.1)
