"""Which workers are in good standing on a question kind, read from its Dawid-Skene fit: the votes the dynamic
estimator's calibration tables count (ILSVRC §3.1.3 tables, built and read from these workers' votes only), and
the most reliable workers a question undecided at its first vote cap is offered to, and the workers whose leases
skip the kind's questions (consensus/standing_lease.py).

A worker's discrimination is Youden's J = sensitivity + specificity - 1 of their fitted rates: 0 for a worker
whose answer does not depend on the truth (a random or an always-yes spammer, a colluder answering at random),
1 for a perfect one. It is read from the worker's votes against the kind's fitted item posteriors, lightly
shrunk towards the crowd's rates (STANDING_PRIOR_STRENGTH), so a newcomer stands at the crowd's average and a
spammer falls out of good standing once about ten of their votes show it. A worker the gold app blocked has
had their votes voided (consensus/voiding.py): the next fit no longer sees them at all. Pure: no Django
import.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from consensus.reliability import DawidSkeneResult

# Below this discrimination a worker's votes leave the table's counts. A worker right 70% of the time on both
# sides has J 0.4; the simulator's random and always-yes spammers and colluders sit near 0, its weak workers
# (accuracy about 0.6) near 0.2.
GOOD_STANDING_MIN_J = 0.4
# The record a worker's standing is read from: their votes weighed against the fit's posterior of each item,
# with this many pseudo-votes at the crowd's rates (the fit itself uses 10, which keeps a spammer looking average
# for forty votes; two let ten votes show an always-yes voter).
STANDING_PRIOR_STRENGTH = 2.0
# Past its first vote cap a question is offered only to this share of the kind's workers, the most
# discriminating first (those who have voted on it aside).
EXTENSION_SHARE = 0.5
# The kind's questions are withheld from a worker out of good standing (`Standing.withholds`) only once their
# record holds this many votes (a few unlucky answers of an honest newcomer do not shut them out), and only while
# at least WITHHOLD_MIN_GOOD of the kind's fitted workers are in good standing (a small team is never left
# without hands; the queue's starved sweep would settle or review what nobody may take).
WITHHOLD_MIN_VOTES = 10
WITHHOLD_MIN_GOOD = 12
# The share of draws (consensus/standing_lease.py: one per worker and refit of the kind's fit) on which a worker
# out of good standing is still offered the kind's questions: their record keeps growing, so a worker misjudged on
# an unlucky start, or one who has improved, climbs back into good standing.
WITHHOLD_EXPLORE_SHARE = 0.1


@dataclass(frozen=True)
class Standing:
    """Each fitted worker's discrimination (Youden's J of their lightly shrunk rates), sorted by worker id, and
    how many of their votes it was read from."""

    worker_ids: NDArray[np.int64]
    j: NDArray[np.float64]
    votes: NDArray[np.int64]
    min_j: float = GOOD_STANDING_MIN_J

    @property
    def excluded(self) -> frozenset[int]:
        return frozenset(int(w) for w in self.worker_ids[self.j < self.min_j])

    @functools.cached_property
    def n_good(self) -> int:
        return int(np.count_nonzero(self.j >= self.min_j))

    def discrimination(self, worker_id: int) -> float | None:
        """The worker's J, or None when the fit has not seen them (a newcomer stands at the crowd's average)."""
        at = int(np.searchsorted(self.worker_ids, worker_id))
        if at >= self.worker_ids.size or int(self.worker_ids[at]) != worker_id:
            return None
        return float(self.j[at])

    def out_of_standing(
        self, worker_id: int, *, min_votes: int = WITHHOLD_MIN_VOTES, min_good: int = WITHHOLD_MIN_GOOD
    ) -> bool:
        """Whether the worker is out of good standing on at least `min_votes` votes while at least `min_good`
        fitted workers are in it: the workers whose leases may skip the kind's questions (`withholds`)."""
        if self.n_good < min_good:
            return False
        at = int(np.searchsorted(self.worker_ids, worker_id))
        if at >= self.worker_ids.size or int(self.worker_ids[at]) != worker_id:
            return False  # not fitted yet: a newcomer stands at the crowd's average
        return bool(self.j[at] < self.min_j and self.votes[at] >= min_votes)

    def withholds(
        self, worker_id: int, draw: float, *, explore: float = WITHHOLD_EXPLORE_SHARE, **judged
    ) -> bool:
        """Whether a lease of `worker_id` is kept from the kind's questions: the worker is `out_of_standing` (its
        keyword arguments pass through) and `draw` (uniform on [0, 1)) is not among the `explore` share of draws
        that offer the questions anyway.

        Votes of a worker out of good standing count for nothing in the tables (`standing_counts`) and little in
        the weighted estimator, yet each is paid for and takes a place a good worker's vote would fill: the
        hostile crowd's spammers cast about a fifth of its votes."""
        return draw >= explore and self.out_of_standing(worker_id, **judged)

    def most_reliable(self, share: float = EXTENSION_SHARE) -> frozenset[int]:
        """The most discriminating `share` of the fitted workers, those in good standing among them."""
        if self.worker_ids.size == 0:
            return frozenset()
        n = max(1, int(round(share * self.worker_ids.size)))
        order = np.argsort(-self.j, kind="stable")[:n]
        return frozenset(int(self.worker_ids[i]) for i in order if self.j[i] >= self.min_j)


def standing_of(
    result: DawidSkeneResult,
    items: ArrayLike,
    workers: ArrayLike,
    answers: ArrayLike,
    *,
    strength: float = STANDING_PRIOR_STRENGTH,
    min_j: float = GOOD_STANDING_MIN_J,
) -> Standing:
    """Each worker's standing from their votes against the fit's item posteriors (expected confusion counts,
    `strength` pseudo-votes at the crowd's pooled rates)."""
    item_arr = np.asarray(items, dtype=np.int64)
    worker_arr = np.asarray(workers, dtype=np.int64)
    yes = np.asarray(answers, dtype=bool).astype(np.float64)
    if item_arr.size == 0:
        return Standing(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.int64), min_j)
    at = np.minimum(np.searchsorted(result.item_ids, item_arr), result.item_ids.size - 1)
    mu = np.where(result.item_ids[at] == item_arr, result.posterior[at], 0.5)
    worker_ids, idx = np.unique(worker_arr, return_inverse=True)
    n = worker_ids.size
    pos = np.bincount(idx, weights=mu, minlength=n)
    neg = np.bincount(idx, weights=1.0 - mu, minlength=n)
    yes_pos = np.bincount(idx, weights=mu * yes, minlength=n)
    no_neg = np.bincount(idx, weights=(1.0 - mu) * (1.0 - yes), minlength=n)
    rel = result.reliability
    sens = (yes_pos + strength * rel.default_sensitivity) / (pos + strength)
    spec = (no_neg + strength * rel.default_specificity) / (neg + strength)
    votes = np.bincount(idx, minlength=n).astype(np.int64)
    return Standing(worker_ids.astype(np.int64), np.asarray(sens + spec - 1.0), votes, min_j)


def standing_counts(
    workers: Sequence[int] | ArrayLike, answers: Sequence[bool] | ArrayLike, excluded: frozenset[int]
) -> tuple[int, int]:
    """(yes, no) among the votes of workers in good standing."""
    yes = no = 0
    for w, a in zip(np.asarray(workers).tolist(), np.asarray(answers, dtype=bool).tolist(), strict=True):
        if int(w) not in excluded:
            yes, no = yes + a, no + (not a)
    return yes, no
