"""A concept's calibration table over reliability-weighted evidence: P(positive | the evidence of the votes so
far), measured on the concept's calibration questions (ILSVRC §3.1.3's per-synset table, with the evidence of
who said what on its axis instead of how many said yes and no).

The raw table of `consensus/calibration.py` reads only (yes, no) counts, so spammers' votes flatten it: a yes
is weak evidence on every image and most positives reach the vote cap undecided (docs/consensus.md). Here each
vote counts by its worker's fitted rates (consensus/reliability.py), a worker out of good standing
(consensus/standing.py) counts nothing, and the table measures, per concept, how often a calibration image
whose votes showed that much evidence was a positive:

* Evidence of a set of votes: the log-odds the kind's Dawid-Skene fit gives them at an even base rate
  (hard items mixed in, as the weighted estimator reads them); the concept's own base rate is the table's.
* Observations: every prefix of a calibration question's votes (in arrival order) is one observation of its
  evidence with the question's reference label (majority of its good-standing votes, a tie half), in bins of
  EVIDENCE_STEP log-odds: what production sees after each vote.
* Smoothing: per bin, a beta-binomial posterior mean towards the model's own reading of the bin, the concept's
  base rate plus the evidence, with `prior_strength` pseudo-images, then a weighted isotonic (non-decreasing)
  fit over the bins. A few dozen calibration images cannot measure a 0.997 bin on their own; they can pull a
  concept whose votes mean less than the model says (a confusable class) below the threshold.

With no spammers, every worker equally good and no hard items, the evidence is (yes - no) times one log-odds
step and this is the raw table folded onto a + b's diagonals. Pure: no Django import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from consensus.calibration import PROBABILITY_FLOOR, pava, reference_labels
from consensus.reliability import WorkerReliability, posterior_positive

EVIDENCE_STEP = 0.5
EVIDENCE_LIMIT = 20.0
DEFAULT_PRIOR_STRENGTH = 100.0
METHOD = "evidence/beta-binomial/model-prior/isotonic"


def _expit(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * x)))


@dataclass(frozen=True)
class EvidenceTable:
    """P(positive) per evidence bin: bin i holds evidence in [lo + i * step, lo + (i + 1) * step)."""

    probabilities: NDArray[np.float64]
    counts: NDArray[np.float64]  # prefix observations per bin
    n_images: int
    n_votes: int
    prior: float  # the concept's base rate, from its calibration images
    excluded: tuple[int, ...] = ()  # workers whose votes the table left out (not in good standing)
    step: float = EVIDENCE_STEP
    limit: float = EVIDENCE_LIMIT
    prior_strength: float = DEFAULT_PRIOR_STRENGTH
    method: str = METHOD

    def bin_of(self, evidence: ArrayLike) -> NDArray[np.int64]:
        e = np.clip(np.asarray(evidence, dtype=np.float64), -self.limit, self.limit - 1e-9)
        return np.asarray(np.floor((e + self.limit) / self.step), dtype=np.int64)

    def p_positive(self, evidence: float) -> float:
        if np.isnan(evidence):
            raise ValueError("evidence must be a number")
        return float(self.probabilities[int(self.bin_of(evidence))])

    def to_dict(self) -> dict[str, Any]:
        return {
            "axis": "evidence",
            "probabilities": [float(p) for p in self.probabilities],
            "counts": [float(c) for c in self.counts],
            "n_images": self.n_images,
            "n_votes": self.n_votes,
            "prior": self.prior,
            "excluded": list(self.excluded),
            "step": self.step,
            "limit": self.limit,
            "prior_strength": self.prior_strength,
            "method": self.method,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvidenceTable:
        return cls(
            probabilities=np.asarray(data["probabilities"], dtype=np.float64),
            counts=np.asarray(data["counts"], dtype=np.float64),
            n_images=int(data["n_images"]),
            n_votes=int(data["n_votes"]),
            prior=float(data["prior"]),
            excluded=tuple(int(w) for w in data.get("excluded", ())),
            step=float(data["step"]),
            limit=float(data["limit"]),
            prior_strength=float(data["prior_strength"]),
            method=str(data.get("method", METHOD)),
        )


def is_evidence_table(data: dict[str, Any]) -> bool:
    """Whether a stored table's JSON is an evidence table (else a (yes, no) table of calibration.py)."""
    return data.get("axis") == "evidence"


def build_evidence_table(
    prefix_evidence: Sequence[ArrayLike],
    good_votes: Sequence[ArrayLike],
    *,
    excluded: Sequence[int] = (),
    prior_strength: float = DEFAULT_PRIOR_STRENGTH,
    step: float = EVIDENCE_STEP,
    limit: float = EVIDENCE_LIMIT,
    tie_label: float = 0.5,
    labels: ArrayLike | None = None,
) -> EvidenceTable:
    """The table from calibration questions: `prefix_evidence[i]` holds question i's evidence after each of its
    good-standing votes (0 votes included, so it starts at 0.0), `good_votes[i]` those votes (True = yes)."""
    if len(prefix_evidence) != len(good_votes):
        raise ValueError("one evidence sequence and one vote sequence per calibration question")
    if prior_strength <= 0:
        raise ValueError("prior_strength must be positive")
    labels = (
        reference_labels(good_votes, None, tie_label)
        if labels is None
        else np.asarray(labels, dtype=np.float64)
    )
    n = len(labels)
    prior = float((labels.sum() + 1.0) / (n + 2.0))
    n_bins = int(round(2 * limit / step))
    probe = EvidenceTable(np.zeros(n_bins), np.zeros(n_bins), n, 0, prior, step=step, limit=limit)
    positives = np.zeros(n_bins)
    counts = np.zeros(n_bins)
    for label, evidence in zip(labels, prefix_evidence, strict=True):
        bins = probe.bin_of(np.asarray(evidence, dtype=np.float64))
        np.add.at(counts, bins, 1.0)
        np.add.at(positives, bins, label)
    centres = -limit + (np.arange(n_bins) + 0.5) * step
    model = _expit(np.log(prior / (1.0 - prior)) + centres)
    raw = (positives + prior_strength * model) / (counts + prior_strength)
    monotone = pava(raw, counts + prior_strength)
    return EvidenceTable(
        probabilities=np.clip(monotone, PROBABILITY_FLOOR, 1.0 - PROBABILITY_FLOOR),
        counts=counts,
        n_images=n,
        n_votes=int(sum(np.asarray(v).size for v in good_votes)),
        prior=prior,
        excluded=tuple(sorted(int(w) for w in excluded)),
        step=step,
        limit=limit,
        prior_strength=prior_strength,
    )


def evidence(
    reliability: WorkerReliability,
    workers: Sequence[int] | ArrayLike,
    answers: Sequence[bool] | ArrayLike,
    excluded: frozenset[int] = frozenset(),
) -> float:
    """The evidence of these votes: the weighted posterior's log-odds at an even base rate, leaving out the
    votes of workers not in good standing."""
    keep = [
        (int(w), bool(a))
        for w, a in zip(np.asarray(workers).tolist(), np.asarray(answers).tolist(), strict=True)
        if int(w) not in excluded
    ]
    if not keep:
        return 0.0
    p = posterior_positive(replace(reliability, prior=0.5), [w for w, _ in keep], [a for _, a in keep])
    p = min(max(p, 1e-15), 1.0 - 1e-15)
    return float(np.log(p / (1.0 - p)))


def prefix_evidence(
    reliability: WorkerReliability,
    workers: Sequence[int] | ArrayLike,
    answers: Sequence[bool] | ArrayLike,
    excluded: frozenset[int] = frozenset(),
) -> tuple[NDArray[np.float64], list[bool]]:
    """(evidence after each good-standing vote, 0 votes first; those votes) of one calibration question."""
    keep = [
        (int(w), bool(a))
        for w, a in zip(np.asarray(workers).tolist(), np.asarray(answers).tolist(), strict=True)
        if int(w) not in excluded
    ]
    out = [0.0] + [
        evidence(reliability, [w for w, _ in keep[:k]], [a for _, a in keep[:k]])
        for k in range(1, len(keep) + 1)
    ]
    return np.asarray(out), [a for _, a in keep]
