"""A box proposal's detector score as the prior of its QUALITY question: a score band whose proposals the crowd
has verified right (or wrong) often enough is worth a number of votes, so a high-score proposal needs fewer
human votes (Papadopoulos et al., CVPR 2016, "We don't need no bounding-boxes": verify a detector's boxes
instead of drawing them). Pure: calibration scores and verdicts in, per-band vote credits out.

The rule. A worker of accuracy `a` on the quality question multiplies the odds of "good" by a / (1 - a) with a
yes (w = log(a / (1 - a)) in log-odds) and divides them by it with a no. A band whose proposals were right with
probability at least p_lo (a one-sided lower confidence bound, never the point estimate) starts at log-odds at
least logit(p_lo), i.e. at least floor(logit(p_lo) / w) yes votes' worth: those are the band's **yes credits**.
Likewise a band right at most p_hi of the time (the upper bound) is worth floor(-logit(p_hi) / w) no votes:
its **no credits**. The question's own rule (a fixed count or a margin) then counts credits as votes, with at
least one human vote always asked (`MIN_HUMAN_VOTES`: a proposal is verified, never trusted), and credits
never reach the rule's bar on their own.

Risk bound. An accept with k yes credits is an accept the rule would make with k more real yes votes from an
even prior, and the band's odds are at least those k votes' odds, so the posterior that an accepted proposal is
good is at least the one the unchanged rule guarantees for a drawn box (the same for rejects). The bound holds
while (1) the band's rate is at least its lower bound (the confidence level below), and (2) workers are at
least `a` accurate on the question (the same assumption as the quality question's prior table)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .thresholds import BAND_WIDTH, band_index

# The quality question's prior worker accuracy (boxes.questions.PRIOR_ACCURACY, docs/boxes.md "Calibration").
WORKER_ACCURACY = 0.9
# One-sided 95% bounds on a band's rate (Wilson score interval).
CONFIDENCE_Z = 1.645
MIN_PER_BAND = 20
MIN_HUMAN_VOTES = 1


@dataclass(frozen=True)
class Band:
    low: float  # the band is [low, low + BAND_WIDTH), the top band includes 1.0
    checked: int
    correct: int
    rate_low: float
    rate_high: float
    yes_credits: int
    no_credits: int


@dataclass(frozen=True)
class ScorePrior:
    """Vote credits per score band, from calibration proposals the crowd has verified."""

    bands: tuple[Band, ...]
    worker_accuracy: float = WORKER_ACCURACY
    band_width: float = BAND_WIDTH

    def credits(self, score: float) -> tuple[int, int]:
        """(yes credits, no credits) of a proposal with this score; (0, 0) in a band with too few checks."""
        index = min(int(score / self.band_width), len(self.bands) - 1) if self.bands else -1
        if index < 0 or not 0.0 <= score <= 1.0:
            return 0, 0
        band = self.bands[index]
        return band.yes_credits, band.no_credits


def wilson_bounds(correct: int, checked: int, z: float = CONFIDENCE_Z) -> tuple[float, float]:
    """The Wilson score interval of a rate (Wilson 1927): (low, high), (0, 1) with nothing checked."""
    if checked == 0:
        return 0.0, 1.0
    p = correct / checked
    centre = p + z * z / (2 * checked)
    spread = z * math.sqrt(p * (1 - p) / checked + z * z / (4 * checked * checked))
    denom = 1 + z * z / checked
    return max(0.0, (centre - spread) / denom), min(1.0, (centre + spread) / denom)


def _votes_worth(rate: float, weight: float) -> int:
    """Whole votes of weight `weight` that a rate's log-odds of being right is worth (0 when at most even)."""
    if rate <= 0.5:
        return 0
    if rate >= 1.0:  # only with z = 0 and a spotless band: no finite bound, so no credit beyond the cap
        return 10**6
    return max(0, math.floor(math.log(rate / (1 - rate)) / weight + 1e-9))


def score_prior_fit(
    scores: Sequence[float] | np.ndarray,
    correct: Sequence[bool] | np.ndarray,
    worker_accuracy: float = WORKER_ACCURACY,
    min_per_band: int = MIN_PER_BAND,
    band_width: float = BAND_WIDTH,
    z: float = CONFIDENCE_Z,
) -> ScorePrior:
    """Per-band credits from calibration proposals (`scores` in [0, 1], `correct`: the crowd verified a box
    matching it, `predictions.thresholds.proposals_correct`). A band with fewer than `min_per_band` checked
    proposals earns no credit."""
    if not 0.5 < worker_accuracy < 1.0:
        raise ValueError("worker_accuracy must lie in (0.5, 1)")
    s = np.asarray(scores, dtype=float)
    c = np.asarray(correct, dtype=bool)
    if s.shape != c.shape:
        raise ValueError("scores and correct must have the same length")
    if s.size and (s.min() < 0.0 or s.max() > 1.0):
        raise ValueError("scores must lie in [0, 1]")
    n_bands = round(1.0 / band_width)
    index = band_index(s, band_width)
    checked = np.bincount(index, minlength=n_bands)
    right = np.bincount(index, weights=c.astype(float), minlength=n_bands)
    return score_prior_from_counts(
        [int(n) for n in checked], [int(r) for r in right], worker_accuracy, min_per_band, band_width, z
    )


def score_prior_from_counts(
    checked_per_band: Sequence[int],
    correct_per_band: Sequence[int],
    worker_accuracy: float = WORKER_ACCURACY,
    min_per_band: int = MIN_PER_BAND,
    band_width: float = BAND_WIDTH,
    z: float = CONFIDENCE_Z,
) -> ScorePrior:
    """`score_prior_fit` from counts per band (band b holds scores in [b * band_width, (b + 1) * band_width),
    the top band 1.0 too), as a grouped database read gives them."""
    if not 0.5 < worker_accuracy < 1.0:
        raise ValueError("worker_accuracy must lie in (0.5, 1)")
    n_bands = round(1.0 / band_width)
    if len(checked_per_band) != n_bands or len(correct_per_band) != n_bands:
        raise ValueError(f"counts for {n_bands} bands of {band_width:g} expected")
    if any(not 0 <= r <= n for r, n in zip(correct_per_band, checked_per_band, strict=True)):
        raise ValueError("each band's correct count must lie between 0 and its checked count")
    weight = math.log(worker_accuracy / (1 - worker_accuracy))
    bands = []
    for b in range(n_bands):
        checked, right = int(checked_per_band[b]), int(correct_per_band[b])
        low, high = wilson_bounds(right, checked, z)
        yes = no = 0
        if checked >= min_per_band:
            yes, no = _votes_worth(low, weight), _votes_worth(1.0 - high, weight)
        bands.append(Band(round(b * band_width, 6), checked, right, low, high, yes, no))
    return ScorePrior(tuple(bands), worker_accuracy, band_width)


def credited_rule(rule: tuple, yes_credits: int, no_credits: int) -> tuple:
    """The question's rule with a proposal's credits counted as votes, at least `MIN_HUMAN_VOTES` human vote
    still needed on either side: a fixed rule ((yes needed, no needed)) needs fewer of each; a margin rule
    ("margin", yes margin, no margin, cap) starts from the credits' margin. The vote cap is unchanged."""
    if rule[0] == "margin":
        _, yes_margin, no_margin, cap = rule
        start = min(yes_credits, yes_margin - MIN_HUMAN_VOTES) - min(no_credits, no_margin - MIN_HUMAN_VOTES)
        return ("margin", yes_margin - start, no_margin + start, cap)
    yes_needed, no_needed = rule
    return (
        max(MIN_HUMAN_VOTES, yes_needed - yes_credits),
        max(MIN_HUMAN_VOTES, no_needed - no_credits),
    )
