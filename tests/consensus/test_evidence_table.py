"""Calibration tables that survive spammers (issue 33), the pure part: workers out of good standing
(consensus/standing.py) bring no evidence, and the evidence table (consensus/evidence_table.py) maps
reliability-weighted evidence to P(positive), monotone. `bench/consensus_crowd_model.py` measures them against
count tables and fixed majorities; the platform builds them in consensus/rebuild.py and reads them in
consensus/estimates.py (docs/consensus.md)."""

from __future__ import annotations

import numpy as np
import pytest

from consensus.evidence_table import build_evidence_table, evidence, prefix_evidence
from consensus.reliability import fit_dawid_skene
from consensus.standing import standing_counts, standing_of


def crowd_votes(n_items: int = 60, seed: int = 0):
    """Eight honest workers (right 90% of the time) and one always-yes voter, each voting on every item."""
    rng = np.random.default_rng(seed)
    truth = rng.random(n_items) < 0.5
    items, workers, answers = [], [], []
    for i in range(n_items):
        for w in range(9):
            items.append(i)
            workers.append(w)
            answers.append(True if w == 8 else bool(truth[i] != (rng.random() < 0.1)))
    return truth, np.asarray(items), np.asarray(workers), np.asarray(answers)


def test_an_always_yes_voter_falls_out_of_good_standing_and_honest_workers_stay():
    _, items, workers, answers = crowd_votes()
    fit = fit_dawid_skene(items, workers, answers)
    standing = standing_of(fit, items, workers, answers)
    assert standing.excluded == frozenset({8})
    assert 8 not in standing.most_reliable(0.5)
    assert standing_counts([8, 1, 2], [True, True, False], standing.excluded) == (1, 1)


def test_evidence_table_reads_no_evidence_from_workers_out_of_standing_and_is_monotone():
    truth, items, workers, answers = crowd_votes()
    fit = fit_dawid_skene(items, workers, answers)
    excluded = frozenset({8})
    # The spammer's yes adds nothing once they are out of good standing.
    assert evidence(fit.reliability, [8, 8, 1], [True, True, True], excluded) == pytest.approx(
        evidence(fit.reliability, [1], [True], excluded)
    )
    prefixes = [
        prefix_evidence(fit.reliability, workers[items == i], answers[items == i], excluded)
        for i in range(60)
    ]
    table = build_evidence_table(
        [e for e, _ in prefixes], [v for _, v in prefixes], excluded=sorted(excluded)
    )
    assert np.all(np.diff(table.probabilities) >= 0)
    assert table.prior == pytest.approx((truth.sum() + 1) / 62, abs=0.05)
    assert table.p_positive(evidence(fit.reliability, [1, 2, 3], [True] * 3, excluded)) >= 0.997
    assert table.p_positive(evidence(fit.reliability, [1, 2, 3], [False] * 3, excluded)) <= 0.02
    assert table.to_dict()["excluded"] == [8]
