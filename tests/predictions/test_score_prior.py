"""The detector score as a QUALITY prior (`predictions.score_prior`): a band earns vote credits only from its
confidence bound, never from a few lucky proposals; credits never reach the rule's bar on their own (one human
vote always asked); and the credited rule's accept is no weaker than the unchanged rule's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from predictions.score_prior import (
    MIN_HUMAN_VOTES,
    credited_rule,
    score_prior_fit,
    wilson_bounds,
)


def test_a_spotless_band_earns_a_yes_credit_only_once_its_lower_bound_passes_one_vote():
    few = score_prior_fit([0.95] * 10, [True] * 10)
    assert few.credits(0.95) == (0, 0)  # under MIN_PER_BAND checked proposals
    enough = score_prior_fit([0.95] * 30, [True] * 30)
    low, _ = wilson_bounds(30, 30)
    assert low > 0.9 and enough.credits(0.95) == (1, 0)  # one vote of a 0.9 worker is odds 9
    assert enough.credits(0.85) == (0, 0)  # an empty band earns nothing


def test_a_band_of_mostly_wrong_proposals_earns_no_credits_and_a_mixed_band_none():
    wrong = score_prior_fit([0.05] * 60, [False] * 60)
    assert wrong.credits(0.05)[1] >= 1 and wrong.credits(0.05)[0] == 0
    mixed = score_prior_fit([0.55] * 100, [True] * 70 + [False] * 30)
    assert mixed.credits(0.55) == (0, 0)


def test_credits_grow_with_the_log_odds_of_the_bound():
    prior = score_prior_fit([0.95] * 2000, [True] * 2000, worker_accuracy=0.9)
    low, _ = wilson_bounds(2000, 2000)
    expected = math.floor(math.log(low / (1 - low)) / math.log(9))
    assert prior.credits(1.0) == (expected, 0) and expected >= 2


@pytest.mark.parametrize(
    ("rule", "credits", "expected"),
    [
        ((2, 2), (1, 0), (1, 2)),
        ((2, 2), (5, 0), (MIN_HUMAN_VOTES, 2)),
        ((2, 2), (0, 1), (2, 1)),
        ((3, 1), (0, 4), (3, MIN_HUMAN_VOTES)),
        (("margin", 3, 2, 12), (2, 0), ("margin", 1, 4, 12)),
        (("margin", 3, 2, 12), (9, 0), ("margin", MIN_HUMAN_VOTES, 4, 12)),
        (("margin", 3, 2, 12), (0, 1), ("margin", 4, 1, 12)),
        (("margin", 3, 2, 12), (0, 0), ("margin", 3, 2, 12)),
    ],
)
def test_credited_rules_keep_one_human_vote_and_the_cap(rule, credits, expected):
    assert credited_rule(rule, *credits) == expected


def test_an_accept_under_credits_is_no_weaker_than_the_unchanged_rule():
    """Posterior odds of "good" at the weakest accept: prior odds of the band's bound times the votes' odds."""
    weight = math.log(9)
    prior = score_prior_fit([0.97] * 500, [True] * 495 + [False] * 5)
    yes_credits, _ = prior.credits(0.97)
    assert yes_credits >= 1
    band = prior.bands[9]
    _, yes_margin, _, _ = credited_rule(("margin", 3, 2, 12), yes_credits, 0)
    weakest = math.log(band.rate_low / (1 - band.rate_low)) + yes_margin * weight
    assert weakest >= 3 * weight  # the unchanged rule's accept from an even prior


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="same length"):
        score_prior_fit([0.5], [True, False])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        score_prior_fit([1.5], [True])
    with pytest.raises(ValueError, match="worker_accuracy"):
        score_prior_fit(np.array([0.5]), np.array([True]), worker_accuracy=0.5)


def test_counts_per_band_give_the_same_prior_as_the_scores_and_are_checked():
    from predictions.score_prior import score_prior_from_counts

    scores = [0.95] * 30 + [0.05] * 40 + [1.0] * 5
    correct = [True] * 30 + [False] * 40 + [True] * 5
    checked, right = [40, 0, 0, 0, 0, 0, 0, 0, 0, 35], [0] * 9 + [35]
    assert score_prior_from_counts(checked, right) == score_prior_fit(scores, correct)
    with pytest.raises(ValueError, match="10 bands"):
        score_prior_from_counts([1], [1])
    with pytest.raises(ValueError, match="between 0 and its checked"):
        score_prior_from_counts([1] + [0] * 9, [2] + [0] * 9)
