"""Reliability-weighted consensus: Dawid-Skene EM over a concept's votes, and P(positive) from who voted what.

Dawid & Skene (1979), two-coin form: each worker has a sensitivity P(yes | positive) and a specificity
P(no | negative); items are latent positives or negatives. Gold answers are anchors (their posterior is fixed).
Each worker's rates get a Beta prior centred on the crowd's pooled rates (empirical Bayes), so a newcomer counts
like an average voter and a proven worker's vote moves P more. Everything is vectorized with bincount so a
million votes fit in about a second.

Hard items. Dawid-Skene assumes a worker errs as often on every item. Crowds do not: on some items honest
workers split (a Burmese cat that looks Siamese, a seal beside a sea otter, an object a few pixels wide), and
their errors there are shared, not independent, so a 6-yes / 4-no split among good workers reads as near
certainty (P 0.998) where it is closer to a coin. `fit_item_difficulty` adds a second kind of item to the
model: with probability `hard_share` an item is hard, and on it every worker's rates are pulled towards 0.5
(`hard_strength`: the share of a worker's edge over chance left on a hard item). Both are fitted by maximum
likelihood over the kind's votes (EM for the share, a grid for the strength). The posterior of an item then
mixes both kinds: unanimous votes still come out near certain (the hard kind explains them badly), a split
among good workers comes out unsure and asks for more votes or a person. This is the item-difficulty idea of
Whitehill et al. (2009, GLAD) in the smallest form that keeps the fit closed-form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from consensus.stopping import Decision, ThresholdPolicy

# Rates are kept off 0 and 1 so one vote can never make P exactly 0 or 1.
RATE_FLOOR = 1e-3
# Pseudo-votes pulling each worker towards the crowd: 10 keeps a worker with a handful of votes near average,
# which the simulated crowd showed is what keeps the weighted posterior calibrated (4 overstated precision).
DEFAULT_PRIOR_STRENGTH = 10.0

Model = Literal["two-coin", "one-coin"]


@dataclass(frozen=True)
class WorkerReliability:
    """Per-worker rates for one (question kind, concept), plus what an unseen worker is assumed to be."""

    worker_ids: NDArray[np.int64]  # sorted
    sensitivity: NDArray[np.float64]  # P(yes | positive)
    specificity: NDArray[np.float64]  # P(no | negative)
    n_votes: NDArray[np.int64]
    prior: float  # P(positive) of an item of this concept
    default_sensitivity: float
    default_specificity: float
    hard_share: float = 0.0  # share of items on which every worker's edge over chance shrinks
    hard_strength: float = 1.0  # on a hard item a rate r becomes 0.5 + hard_strength * (r - 0.5)

    @property
    def accuracy(self) -> NDArray[np.float64]:
        """Probability that a worker's vote is right on an item drawn from this concept's pool."""
        return np.asarray(self.prior * self.sensitivity + (1.0 - self.prior) * self.specificity)

    def rates_for(self, workers: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(sensitivity, specificity) for each listed worker; unseen workers get the crowd defaults."""
        w = np.asarray(workers, dtype=np.int64)
        sens = np.full(w.shape, self.default_sensitivity)
        spec = np.full(w.shape, self.default_specificity)
        if self.worker_ids.size:
            pos = np.minimum(np.searchsorted(self.worker_ids, w), self.worker_ids.size - 1)
            known = self.worker_ids[pos] == w
            sens = np.where(known, self.sensitivity[pos], sens)
            spec = np.where(known, self.specificity[pos], spec)
        return sens, spec

    def vote_log_likelihoods(
        self, workers: ArrayLike, answers: ArrayLike, *, hard: bool = False
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(log P(vote | positive), log P(vote | negative)) for each vote, on an ordinary item or a hard one."""
        sens, spec = self.rates_for(workers)
        if hard:
            sens = 0.5 + self.hard_strength * (sens - 0.5)
            spec = 0.5 + self.hard_strength * (spec - 0.5)
        yes = np.asarray(answers, dtype=bool)
        return np.log(np.where(yes, sens, 1.0 - sens)), np.log(np.where(yes, 1.0 - spec, spec))

    def vote_log_likelihood_ratios(self, workers: ArrayLike, answers: ArrayLike) -> NDArray[np.float64]:
        """log P(vote | positive) - log P(vote | negative) for each vote."""
        sens, spec = self.rates_for(workers)
        yes = np.asarray(answers, dtype=bool)
        return np.where(yes, np.log(sens / (1.0 - spec)), np.log((1.0 - sens) / spec))


@dataclass(frozen=True)
class DawidSkeneResult:
    reliability: WorkerReliability
    item_ids: NDArray[np.int64]  # sorted
    posterior: NDArray[np.float64]  # P(positive) per item, aligned with item_ids
    iterations: int
    converged: bool


def _expit(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * x)))


def fit_dawid_skene(
    items: ArrayLike,
    workers: ArrayLike,
    answers: ArrayLike,
    *,
    gold_items: ArrayLike | None = None,
    gold_labels: ArrayLike | None = None,
    model: Model = "two-coin",
    prior_strength: float = DEFAULT_PRIOR_STRENGTH,
    max_iter: int = 100,
    tol: float = 1e-5,
) -> DawidSkeneResult:
    """EM estimate of worker rates and item posteriors from (item, worker, answer) triples.

    ``gold_items``/``gold_labels`` fix known items' labels; they anchor the rates and break the label-swap
    symmetry. Initialisation is the per-item share of yes votes (soft majority), the usual Dawid-Skene start.
    """
    item_arr = np.asarray(items, dtype=np.int64)
    worker_arr = np.asarray(workers, dtype=np.int64)
    yes = np.asarray(answers, dtype=bool)
    if not (item_arr.shape == worker_arr.shape == yes.shape) or item_arr.ndim != 1:
        raise ValueError("items, workers and answers must be 1-D arrays of equal length")
    if prior_strength < 0:
        raise ValueError("prior_strength cannot be negative")
    item_ids, item_idx = np.unique(item_arr, return_inverse=True)
    worker_ids, worker_idx = np.unique(worker_arr, return_inverse=True)
    n_items, n_workers = item_ids.size, worker_ids.size
    yes_f = yes.astype(np.float64)

    clamp = np.zeros(n_items, dtype=bool)
    clamp_value = np.zeros(n_items)
    if gold_items is not None:
        g_items = np.asarray(gold_items, dtype=np.int64)
        g_labels = np.asarray(gold_labels, dtype=bool)
        if g_items.shape != g_labels.shape:
            raise ValueError("gold_items and gold_labels must have the same length")
        pos = np.searchsorted(item_ids, g_items)
        pos_c = np.minimum(pos, max(n_items - 1, 0))
        present = (pos < n_items) & (item_ids[pos_c] == g_items) if n_items else np.zeros(g_items.shape, bool)
        clamp[pos_c[present]] = True
        clamp_value[pos_c[present]] = g_labels[present]

    votes_per_item = np.bincount(item_idx, minlength=n_items).astype(np.float64)
    mu = np.bincount(item_idx, weights=yes_f, minlength=n_items) / np.maximum(votes_per_item, 1.0)
    mu = np.where(clamp, clamp_value, mu)
    n_votes = np.bincount(worker_idx, minlength=n_workers).astype(np.int64)

    sens = spec = np.full(n_workers, 0.5)
    pooled_sens = pooled_spec = 0.5
    prior = 0.5
    converged = False
    iterations = 0
    # With gold present the first M-step learns the rates from gold items alone: a majority start can sit in the
    # mirrored mode (a crowd that is mostly wrong) and EM would never leave it.
    gold_votes = clamp[item_idx]
    anchored_start = bool(gold_votes.any())
    for iteration in range(1, max_iter + 1):
        iterations = iteration
        # M-step: expected confusion counts per worker, shrunk towards the crowd's pooled rates.
        w_v = gold_votes.astype(np.float64) if iteration == 1 and anchored_start else np.ones(item_idx.size)
        mu_v = mu[item_idx]
        pos_mass = np.bincount(worker_idx, weights=w_v * mu_v, minlength=n_workers)
        neg_mass = np.bincount(worker_idx, weights=w_v * (1.0 - mu_v), minlength=n_workers)
        yes_on_pos = np.bincount(worker_idx, weights=w_v * mu_v * yes_f, minlength=n_workers)
        no_on_neg = np.bincount(worker_idx, weights=w_v * (1.0 - mu_v) * (1.0 - yes_f), minlength=n_workers)
        if model == "two-coin":
            pooled_sens = (yes_on_pos.sum() + 1.0) / (pos_mass.sum() + 2.0)
            pooled_spec = (no_on_neg.sum() + 1.0) / (neg_mass.sum() + 2.0)
            sens = (yes_on_pos + prior_strength * pooled_sens) / (pos_mass + prior_strength)
            spec = (no_on_neg + prior_strength * pooled_spec) / (neg_mass + prior_strength)
        elif model == "one-coin":
            right = yes_on_pos + no_on_neg
            pooled_sens = pooled_spec = (right.sum() + 1.0) / (pos_mass.sum() + neg_mass.sum() + 2.0)
            sens = spec = (right + prior_strength * pooled_sens) / (pos_mass + neg_mass + prior_strength)
        else:
            raise ValueError(f"unknown model {model!r}")
        sens = np.clip(np.nan_to_num(sens, nan=pooled_sens), RATE_FLOOR, 1.0 - RATE_FLOOR)
        spec = np.clip(np.nan_to_num(spec, nan=pooled_spec), RATE_FLOOR, 1.0 - RATE_FLOOR)
        if iteration == 1 and anchored_start:
            prior = float((clamp_value[clamp].sum() + 1.0) / (clamp.sum() + 2.0))
        else:
            prior = float((mu.sum() + 1.0) / (n_items + 2.0))

        # E-step: item log-odds = prior log-odds + sum of its votes' log-likelihood ratios.
        llr_yes = np.log(sens / (1.0 - spec))
        llr_no = np.log((1.0 - sens) / spec)
        llr = np.where(yes, llr_yes[worker_idx], llr_no[worker_idx])
        log_odds = np.log(prior / (1.0 - prior)) + np.bincount(item_idx, weights=llr, minlength=n_items)
        new_mu = np.where(clamp, clamp_value, _expit(log_odds))
        delta = float(np.max(np.abs(new_mu - mu))) if n_items else 0.0
        mu = new_mu
        if delta < tol:
            converged = True
            break

    reliability = WorkerReliability(
        worker_ids=worker_ids.astype(np.int64),
        sensitivity=np.asarray(sens, dtype=np.float64),
        specificity=np.asarray(spec, dtype=np.float64),
        n_votes=n_votes,
        prior=prior,
        default_sensitivity=float(np.clip(pooled_sens, RATE_FLOOR, 1 - RATE_FLOOR)),
        default_specificity=float(np.clip(pooled_spec, RATE_FLOOR, 1 - RATE_FLOOR)),
    )
    return DawidSkeneResult(
        reliability=reliability,
        item_ids=item_ids.astype(np.int64),
        posterior=mu,
        iterations=iterations,
        converged=converged,
    )


def posterior_positive(
    reliability: WorkerReliability, workers: Sequence[int] | ArrayLike, answers: Sequence[bool] | ArrayLike
) -> float:
    """P(positive | these votes) for one item, each vote weighted by its worker's proven rates; with a fitted
    hard-item share, mixed over the item being ordinary or hard (module docstring)."""
    prior_log_odds = np.log(reliability.prior / (1.0 - reliability.prior))
    h = reliability.hard_share
    if h <= 0.0:
        llr = reliability.vote_log_likelihood_ratios(workers, answers)
        return float(_expit(np.asarray(prior_log_odds + float(np.sum(llr)))))
    pos_e, neg_e = (float(np.sum(x)) for x in reliability.vote_log_likelihoods(workers, answers))
    pos_h, neg_h = (float(np.sum(x)) for x in reliability.vote_log_likelihoods(workers, answers, hard=True))
    log_easy, log_hard = np.log1p(-h), np.log(h)
    pos = np.logaddexp(log_easy + pos_e, log_hard + pos_h)
    neg = np.logaddexp(log_easy + neg_e, log_hard + neg_h)
    return float(_expit(np.asarray(prior_log_odds + pos - neg)))


# The strengths tried for hard items (share of a worker's edge over chance kept on one) and the largest share
# of hard items the fit may report: past it "hard" stops meaning the exception.
HARD_STRENGTHS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
HARD_SHARE_MAX = 0.5
# A fitted share below this is no evidence of hard items: the plain model is kept.
HARD_SHARE_MIN = 0.005


def fit_item_difficulty(
    result: DawidSkeneResult,
    items: ArrayLike,
    workers: ArrayLike,
    answers: ArrayLike,
    *,
    iterations: int = 60,
) -> DawidSkeneResult:
    """The fit with a hard-item share and strength added to its reliability (module docstring): for each
    strength of HARD_STRENGTHS, EM over the share with the worker rates held, keeping the pair of highest
    likelihood of the votes. Split votes among good workers are what the share is learned from."""
    rel = result.reliability
    item_arr = np.asarray(items, dtype=np.int64)
    if item_arr.size == 0:
        return result
    _, item_idx = np.unique(item_arr, return_inverse=True)
    n_items = int(item_idx.max()) + 1

    def per_item(logs: NDArray[np.float64]) -> NDArray[np.float64]:
        # With weights bincount sums floats (float64); numpy's stubs type every bincount as int.
        return np.bincount(item_idx, weights=logs, minlength=n_items)  # type: ignore[return-value]

    pos_e, neg_e = (per_item(x) for x in rel.vote_log_likelihoods(workers, answers))
    log_pi, log_not_pi = np.log(rel.prior), np.log1p(-rel.prior)
    easy = np.logaddexp(log_pi + pos_e, log_not_pi + neg_e)  # log P(votes | ordinary item)
    best = (float(np.sum(easy)), 0.0, 1.0)  # log-likelihood, share, strength
    for strength in HARD_STRENGTHS:
        probe = replace(rel, hard_share=0.0, hard_strength=strength)
        pos_h, neg_h = (per_item(x) for x in probe.vote_log_likelihoods(workers, answers, hard=True))
        hard = np.logaddexp(log_pi + pos_h, log_not_pi + neg_h)
        share = 0.05
        for _ in range(iterations):
            a, b = np.log(share) + hard, np.log1p(-share) + easy
            share = float(np.clip(np.mean(_expit(a - b)), 1e-6, HARD_SHARE_MAX))
        log_lik = float(np.sum(np.logaddexp(np.log(share) + hard, np.log1p(-share) + easy)))
        if log_lik > best[0]:
            best = (log_lik, share, strength)
    _, share, strength = best
    if share < HARD_SHARE_MIN:
        return result
    return replace(result, reliability=replace(rel, hard_share=share, hard_strength=strength))


def decide_weighted(
    reliability: WorkerReliability,
    workers: Sequence[int] | ArrayLike,
    answers: Sequence[bool] | ArrayLike,
    policy: ThresholdPolicy,
) -> Decision:
    """Sequential decision for one item from its votes so far (the weighted counterpart of ``decide``)."""
    n = int(np.asarray(answers).size)
    p = posterior_positive(reliability, workers, answers)
    return Decision.from_code(int(policy.decide_probability(p, n)))


def running_posteriors(
    reliability: WorkerReliability, items: ArrayLike, workers: ArrayLike, answers: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """For a stream of votes in arrival order: P(positive) of the vote's item just after it, and its vote count.

    A grouped cumulative sum of log-likelihood ratios (stable sort by item, cumsum, subtract each group's
    offset) so a million votes take a fraction of a second.
    """
    item_arr = np.asarray(items, dtype=np.int64)
    llr = reliability.vote_log_likelihood_ratios(workers, answers)
    order = np.argsort(item_arr, kind="stable")
    sorted_items = item_arr[order]
    csum = np.cumsum(llr[order])
    starts = np.ones(sorted_items.size, dtype=bool)
    starts[1:] = sorted_items[1:] != sorted_items[:-1]
    group_start = np.maximum.accumulate(np.where(starts, np.arange(sorted_items.size), 0))
    offset = np.where(group_start > 0, csum[group_start - 1], 0.0)
    base = np.log(reliability.prior / (1.0 - reliability.prior))
    p_sorted = _expit(base + csum - offset)
    count_sorted = np.arange(sorted_items.size) - group_start + 1
    p = np.empty_like(p_sorted)
    counts = np.empty(sorted_items.size, dtype=np.int64)
    p[order] = p_sorted
    counts[order] = count_sorted
    return p, counts


def decide_stream(
    reliability: WorkerReliability,
    items: ArrayLike,
    workers: ArrayLike,
    answers: ArrayLike,
    policy: ThresholdPolicy,
) -> NDArray[np.int8]:
    """Decision code after every vote of a stream (votes after an item's first decision are still evaluated)."""
    p, counts = running_posteriors(reliability, items, workers, answers)
    return policy.decide_probability(p, counts)


__all__ = [
    "DawidSkeneResult",
    "WorkerReliability",
    "decide_stream",
    "decide_weighted",
    "fit_dawid_skene",
    "fit_item_difficulty",
    "posterior_positive",
    "running_posteriors",
]
