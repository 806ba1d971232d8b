"""End to end through the HTTP API: a seeded simulated crowd verifies noisy candidates with dynamic consensus
(calibration, tables, sequential votes), and the accepted labels are compared with the ground truth.

Size: 3 synsets x 50 candidates (about 90 true positives) keeps the run near a minute. At that size one false
positive is 1.1% of the accepted set, so "precision >= 99.5%" would be a coin flip on a 99.7% target (expected
false positives ~0.3), and recall swings with the difficulty drawn for 3 synsets (one hard synset sends many of
its candidates to review at the 12-vote cap). The 99.5% / 95% targets are asserted on 20 synsets x 500
candidates by the pure simulation test (tests/consensus/test_simulation.py); a 5 synsets x 60 candidates run
through this API measured 99.44% / 96.2% (one false positive among 180 accepted, seed 1, about 150 s). Here the
bars are ones a correct engine clears with margin: precision >= 98%, recall >= 80%, and every question ends
decided or in review."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def simulate(**options) -> dict:
    out = io.StringIO()
    args = [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
    call_command("simulate", "--no-progress", "--image-size=96x72", *args, stdout=out)
    return json.loads(out.getvalue())


def test_dynamic_consensus_through_the_api_reaches_the_precision_and_recall_targets():
    summary = simulate(images=150, synsets=3, workers=25, seed=1)
    assert summary["submit_errors"] == 0
    assert summary["tasks_by_kind"] == {"question": summary["tasks_answered"]}
    assert summary["precision"] >= 0.98, summary
    assert summary["recall"] >= 0.80, summary
    decided = round(summary["questions_per_image"] * summary["images"])
    assert decided + summary["review"] == summary["images"], "no question is left open or waiting"
    # Calibration is charged: 20 calibration images x 10 votes per synset alone is 200 / 60 = 3.3 votes/image.
    assert summary["votes_per_image"] >= 3.3
