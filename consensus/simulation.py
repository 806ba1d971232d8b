"""A small seeded crowd model for checking the consensus rules against known truth (numpy only).

Candidate pools are noisy like search-engine results (ILSVRC §3.1.3): a share of true positives per synset,
synsets of varying difficulty, workers whose accuracy varies, and spammers who answer at random. Every rule is
run on the same pre-drawn votes, so cost differences come from the rule and not from luck.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from consensus.calibration import DEFAULT_CAP, ConfidenceTable, build_table, calibration_sample_size
from consensus.reliability import DEFAULT_PRIOR_STRENGTH as RELIABILITY_PRIOR_STRENGTH
from consensus.reliability import fit_dawid_skene
from consensus.stopping import ACCEPT, ASK_MORE, MajorityPolicy, ThresholdPolicy, first_decisions


def _logit(p: NDArray[np.float64] | float) -> NDArray[np.float64]:
    return np.asarray(np.log(p) - np.log1p(-np.asarray(p)))


def _expit(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * x)))


@dataclass(frozen=True)
class CrowdModel:
    """Parameters of the simulated crowd and candidate pools."""

    n_synsets: int = 20
    images_per_synset: int = 500
    positive_rate: float = 0.6
    n_workers: int = 150
    spammer_fraction: float = 0.10
    # Honest workers' accuracy on an average synset ~ Beta(mean * c, (1 - mean) * c): sd ~0.06 at c = 30.
    accuracy_mean: float = 0.88
    accuracy_concentration: float = 30.0
    # Per-synset shift of every worker's log-odds of answering right: harder and easier concepts. The default
    # spreads an average honest worker's accuracy from ~0.83 (hard synset) to ~0.94 (easy synset).
    synset_shift: tuple[float, float] = (-0.4, 0.8)
    # False positives are likelier than misses on look-alike candidates: specificity sits this far below.
    asymmetry: float = 0.3
    # A few candidates are genuinely ambiguous: workers' log-odds of being right shrink by this factor on them.
    hard_image_fraction: float = 0.03
    hard_image_factor: float = 0.5
    seed: int = 0

    def sample(self) -> SimulatedCrowd:
        rng = np.random.default_rng(self.seed)
        n_images = self.n_synsets * self.images_per_synset
        synset = np.repeat(np.arange(self.n_synsets), self.images_per_synset)
        truth = rng.random(n_images) < self.positive_rate
        hard = rng.random(n_images) < self.hard_image_fraction
        c = self.accuracy_concentration
        accuracy = rng.beta(self.accuracy_mean * c, (1.0 - self.accuracy_mean) * c, size=self.n_workers)
        spammer = np.zeros(self.n_workers, dtype=bool)
        n_spam = int(round(self.spammer_fraction * self.n_workers))
        spammer[rng.choice(self.n_workers, size=n_spam, replace=False)] = True
        shift = rng.uniform(*self.synset_shift, size=self.n_synsets)
        return SimulatedCrowd(
            model=self,
            synset=synset,
            truth=truth,
            hard=hard,
            worker_logit=_logit(np.clip(accuracy, 0.51, 0.999)),
            spammer=spammer,
            synset_shift=shift,
        )


@dataclass(frozen=True)
class SimulatedCrowd:
    model: CrowdModel
    synset: NDArray[np.int64]  # per image
    truth: NDArray[np.bool_]  # per image
    hard: NDArray[np.bool_]  # per image
    worker_logit: NDArray[np.float64]  # per worker: log-odds of a right answer on an average synset
    spammer: NDArray[np.bool_]  # per worker
    synset_shift: NDArray[np.float64]  # per synset

    @property
    def n_images(self) -> int:
        return int(self.truth.size)

    def p_right(self, images: NDArray[np.int64], workers: NDArray[np.int64]) -> NDArray[np.float64]:
        """Probability that ``workers`` answer ``images`` correctly (broadcasting)."""
        truth = self.truth[images]
        half = 0.5 * self.model.asymmetry
        logit = (
            self.worker_logit[workers] + self.synset_shift[self.synset[images]] + np.where(truth, half, -half)
        )
        logit = np.where(self.hard[images], logit * self.model.hard_image_factor, logit)
        return np.where(self.spammer[workers], 0.5, _expit(logit))

    def draw_votes(self, n_votes: int, seed: int = 1) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        """Every image's first ``n_votes`` votes in arrival order, each from a different random worker."""
        rng = np.random.default_rng(seed)
        n_workers = self.worker_logit.size
        if n_votes > n_workers:
            raise ValueError("an image cannot get more votes than there are workers")
        keys = rng.random((self.n_images, n_workers))
        workers = np.argpartition(keys, n_votes - 1, axis=1)[:, :n_votes]
        images = np.arange(self.n_images)[:, None]
        right = rng.random(workers.shape) < self.p_right(images, workers)
        answers = right == self.truth[:, None]
        return workers.astype(np.int64), answers


@dataclass(frozen=True)
class Outcome:
    name: str
    precision: float  # of accepted items, share truly positive
    recall: float  # of true positives, share accepted
    votes_per_image: float  # all votes spent, calibration included, over all images
    accepted: int
    rejected: int
    review: int
    n_images: int
    n_votes: int


def _outcome(
    name: str, truth: NDArray[np.bool_], codes: NDArray[np.int8], votes: NDArray[np.int64]
) -> Outcome:
    accepted = codes == ACCEPT
    tp = int(np.sum(accepted & truth))
    n_acc = int(accepted.sum())
    return Outcome(
        name=name,
        precision=tp / n_acc if n_acc else float("nan"),
        recall=tp / int(truth.sum()) if truth.any() else float("nan"),
        votes_per_image=float(votes.sum()) / truth.size,
        accepted=n_acc,
        rejected=int(np.sum(codes == 2)),
        review=int(np.sum((codes == 3) | (codes == ASK_MORE))),
        n_images=int(truth.size),
        n_votes=int(votes.sum()),
    )


@dataclass(frozen=True)
class Workload:
    """The crowd, every image's pre-drawn votes, and which images form each synset's calibration set."""

    crowd: SimulatedCrowd
    workers: NDArray[np.int64]  # (n_images, cap)
    answers: NDArray[np.bool_]  # (n_images, cap)
    calibration: NDArray[np.bool_]  # per image
    calibration_votes: int

    @classmethod
    def make(
        cls,
        model: CrowdModel,
        cap: int = DEFAULT_CAP,
        calibration_votes: int = 10,
        calibration_fraction: float = 0.10,
        max_votes: int = 15,
        seed: int = 1,
    ) -> Workload:
        """``max_votes`` votes are drawn per image so fixed majorities up to that size can run on the same votes."""
        crowd = model.sample()
        workers, answers = crowd.draw_votes(max(cap, calibration_votes, max_votes), seed=seed)
        rng = np.random.default_rng(seed + 1)
        calibration = np.zeros(crowd.n_images, dtype=bool)
        for s in range(model.n_synsets):
            members = np.flatnonzero(crowd.synset == s)
            k = calibration_sample_size(members.size, fraction=calibration_fraction)
            calibration[rng.choice(members, size=k, replace=False)] = True
        return cls(crowd, workers, answers, calibration, calibration_votes)

    def run_majority(self, n_votes: int) -> Outcome:
        """Fixed majority with early stop; needs no calibration, so no calibration votes are charged."""
        codes, votes = first_decisions(None, self.answers, MajorityPolicy(n_votes))
        return _outcome(f"majority{n_votes}", self.crowd.truth, codes, votes)

    def run_dynamic(
        self, policy: ThresholdPolicy, **table_options: Any
    ) -> tuple[Outcome, dict[int, ConfidenceTable]]:
        """ImageNet-style dynamic consensus with one table per synset; calibration images keep their votes."""
        n = self.crowd.n_images
        codes = np.zeros(n, dtype=np.int8)
        votes = np.zeros(n, dtype=np.int64)
        tables: dict[int, ConfidenceTable] = {}
        start = np.where(self.calibration, self.calibration_votes, 1)
        for s in range(self.crowd.model.n_synsets):
            members = self.crowd.synset == s
            cal = np.flatnonzero(members & self.calibration)
            table = build_table(
                list(self.answers[cal, : self.calibration_votes]), cap=policy.cap, **table_options
            )
            tables[s] = table
            idx = np.flatnonzero(members)
            c, v = first_decisions(table, self.answers[idx], policy, start=start[idx])
            codes[idx], votes[idx] = c, v
        return _outcome("dynamic", self.crowd.truth, codes, votes), tables

    def run_weighted(
        self, policy: ThresholdPolicy, prior_strength: float = RELIABILITY_PRIOR_STRENGTH
    ) -> Outcome:
        """Reliability-weighted sequential consensus: one more vote per undecided image per round, with the
        synset's Dawid-Skene fit refreshed on every vote revealed so far before each round's decisions."""
        n = self.crowd.n_images
        codes = np.zeros(n, dtype=np.int8)
        votes = np.zeros(n, dtype=np.int64)
        start = np.where(self.calibration, self.calibration_votes, 1)
        cap = policy.cap
        for s in range(self.crowd.model.n_synsets):
            idx = np.flatnonzero(self.crowd.synset == s)
            revealed = np.zeros(idx.size, dtype=np.int64)
            undecided = np.ones(idx.size, dtype=bool)
            for r in range(1, cap + 1):
                revealed = np.where(undecided, np.maximum(r, start[idx]), revealed)
                mask = np.arange(self.workers.shape[1])[None, :] < revealed[:, None]
                rows, cols = np.nonzero(mask)
                fit = fit_dawid_skene(
                    idx[rows],
                    self.workers[idx[rows], cols],
                    self.answers[idx[rows], cols],
                    prior_strength=prior_strength,
                )
                # item_ids are sorted and every image in idx has >= 1 revealed vote, so they align with idx.
                decision = policy.decide_probability(fit.posterior, revealed)
                newly = undecided & (decision != ASK_MORE)
                codes[idx[newly]] = decision[newly]
                undecided &= ~newly
                if not undecided.any():
                    break
            votes[idx] = revealed
        return _outcome("weighted", self.crowd.truth, codes, votes)
