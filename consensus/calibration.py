"""Per-(question kind, concept) confidence tables: P(positive | a yes, b no) estimated from calibration votes.

ImageNet's dynamic consensus (ILSVRC §3.1.3): a calibration subset of a synset's candidates gets many votes each,
and the resulting table tells production how much agreement this synset needs.

Estimator (documented choices):

* Reference label of a calibration image: its gold answer where one is known, otherwise the majority of all its
  votes. A tie counts as ``tie_label`` (default 0.5: half an image on each side), so ambiguous images neither
  inflate nor deflate either class; question kinds that must favour "yes" (hierarchy) may pass 1.0.
* Pattern counts: every prefix of an image's vote sequence (in arrival order) with a + b <= cap is one
  observation of the pattern (a, b) with that image's reference label -- exactly what production sees when it
  looks up the table after each vote.
* Smoothing: a beta-binomial posterior mean per pattern, ``(positives + s * m) / (images + s)``, whose prior mean
  ``m`` comes from a two-class binomial mixture (latent positive/negative, one yes-rate per class, votes
  independent given the class) fitted to the same calibration images by EM with gold answers clamped, read as a
  beta-binomial posterior predictive so the rates' own uncertainty is priced in. Sparse or unseen patterns fall
  back to the model, never to an accidental 0 or 1. The default strength (100 pseudo-images) is deliberately
  strong: with 20-100 calibration images, raw frequencies near the accept threshold are noisy and choosing the
  cells that happen to clear it overstates precision (on the simulated crowd of consensus/simulation.py,
  six seeds: s = 10 gave 99.45-99.69% accepted precision at a 99.7% target, s = 100 gave 99.77-99.89%).
* Monotonicity: the weighted L2 projection onto tables that never decrease with a and never increase with b
  (bimonotone isotonic regression), computed by Dykstra's alternating projections of row-wise and column-wise
  pool-adjacent-violators; a final cumulative max/min pass removes the last floating-point residue. A projection
  (rather than a bare cumulative max) pools violators instead of always pushing them up, which would overstate P
  on the accept side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

DEFAULT_CAP = 12
DEFAULT_PRIOR_STRENGTH = 100.0
DEFAULT_MAX_CONCENTRATION: float | None = None
# Table values are kept this far from 0 and 1 so a log-odds or a ratio built from them stays finite.
PROBABILITY_FLOOR = 1e-9
Reference = Literal["majority", "posterior"]
METHOD = "beta-binomial/mixture-prior/bimonotone-isotonic"


@dataclass(frozen=True)
class MixtureFit:
    """Two-class binomial mixture: prior P(positive) and, per class, a Beta posterior over its per-vote yes rate.

    ``pos_yes``/``pos_no`` (and ``neg_yes``/``neg_no``) are the Beta parameters: expected yes/no votes on
    positive (negative) calibration images plus one. Their means are the plug-in rates.
    """

    prior: float
    pos_yes: float
    pos_no: float
    neg_yes: float
    neg_no: float
    iterations: int

    @property
    def sensitivity(self) -> float:  # P(yes | positive)
        return self.pos_yes / (self.pos_yes + self.pos_no)

    @property
    def false_positive_rate(self) -> float:  # P(yes | negative)
        return self.neg_yes / (self.neg_yes + self.neg_no)

    def plug_in_posterior(self, yes: NDArray[np.int64], no: NDArray[np.int64]) -> NDArray[np.float64]:
        """P(positive) of a calibration image from all its votes, with the fitted rates taken as exact."""
        q1, q0 = self.sensitivity, self.false_positive_rate
        logit = (
            np.log(self.prior / (1 - self.prior)) + yes * np.log(q1 / q0) + no * np.log((1 - q1) / (1 - q0))
        )
        return _expit(np.asarray(logit, dtype=np.float64))

    def log_odds(
        self, a: NDArray[np.int64], b: NDArray[np.int64], max_concentration: float | None = None
    ) -> NDArray[np.float64]:
        """Posterior predictive log-odds of a positive for a new image after ``a`` yes and ``b`` no votes.

        The per-class yes rate is integrated over its Beta posterior (a beta-binomial likelihood), so the
        uncertainty of rates fitted on a few dozen images makes long runs of agreement count for less than the
        plug-in rates would claim. ``max_concentration`` caps each Beta's total pseudo-count, which also
        stands for rates varying from image to image (ambiguous candidates) however large the calibration set.
        """
        cap = int(max(np.max(a, initial=0), np.max(b, initial=0)))
        return (
            np.log(self.prior / (1.0 - self.prior))
            + _log_beta_ratio(self.pos_yes, self.pos_no, a, b, cap, max_concentration)
            - _log_beta_ratio(self.neg_yes, self.neg_no, a, b, cap, max_concentration)
        )


def _log_beta_ratio(
    alpha: float,
    beta: float,
    a: NDArray[np.int64],
    b: NDArray[np.int64],
    cap: int,
    max_concentration: float | None,
) -> NDArray[np.float64]:
    """log B(alpha + a, beta + b) - log B(alpha, beta), by running sums of logs (no special functions needed)."""
    if max_concentration is not None and alpha + beta > max_concentration:
        scale = max_concentration / (alpha + beta)
        alpha, beta = alpha * scale, beta * scale
    steps = np.arange(2 * cap + 1, dtype=np.float64)
    up_a = np.concatenate([[0.0], np.cumsum(np.log(alpha + steps))])
    up_b = np.concatenate([[0.0], np.cumsum(np.log(beta + steps))])
    up_n = np.concatenate([[0.0], np.cumsum(np.log(alpha + beta + steps))])
    return np.asarray(up_a[a] + up_b[b] - up_n[a + b])


@dataclass(frozen=True)
class ConfidenceTable:
    """P(positive | a yes, b no) for every pattern with a + b <= cap; cells beyond the cap are NaN."""

    cap: int
    probabilities: NDArray[np.float64]  # shape (cap + 1, cap + 1), indexed [a, b]
    n_images: int
    n_votes: int
    prior: float  # fitted P(positive) of a calibration image
    method: str = METHOD
    counts: NDArray[np.float64] | None = field(default=None, compare=False)  # images observed per pattern
    sensitivity: float = float("nan")  # mixture P(yes | positive), for display and diagnostics
    false_positive_rate: float = float("nan")
    prior_strength: float = DEFAULT_PRIOR_STRENGTH

    def p_positive(self, a: int, b: int) -> float:
        if a < 0 or b < 0 or a + b > self.cap:
            raise ValueError(f"pattern ({a} yes, {b} no) is outside a table capped at {self.cap} votes")
        return float(self.probabilities[a, b])

    def lookup(self, a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
        """Vectorized P for many patterns; patterns beyond the cap read as NaN."""
        a_arr = np.asarray(a, dtype=np.int64)
        b_arr = np.asarray(b, dtype=np.int64)
        inside = (a_arr >= 0) & (b_arr >= 0) & (a_arr + b_arr <= self.cap)
        out = np.full(np.broadcast(a_arr, b_arr).shape, np.nan)
        ai = np.where(inside, a_arr, 0)
        bi = np.where(inside, b_arr, 0)
        np.copyto(out, self.probabilities[ai, bi], where=inside)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; probabilities are stored as the triangle, row a holding b = 0..cap - a."""
        return {
            "cap": self.cap,
            "probabilities": [
                [float(self.probabilities[a, b]) for b in range(self.cap + 1 - a)]
                for a in range(self.cap + 1)
            ],
            "counts": None
            if self.counts is None
            else [[float(self.counts[a, b]) for b in range(self.cap + 1 - a)] for a in range(self.cap + 1)],
            "n_images": self.n_images,
            "n_votes": self.n_votes,
            "prior": self.prior,
            "method": self.method,
            "sensitivity": self.sensitivity,
            "false_positive_rate": self.false_positive_rate,
            "prior_strength": self.prior_strength,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConfidenceTable:
        cap = int(data["cap"])
        probabilities = _triangle_from_rows(data["probabilities"], cap)
        counts = None if data.get("counts") is None else _triangle_from_rows(data["counts"], cap)
        return cls(
            cap=cap,
            probabilities=probabilities,
            n_images=int(data["n_images"]),
            n_votes=int(data["n_votes"]),
            prior=float(data["prior"]),
            method=str(data.get("method", METHOD)),
            counts=counts,
            sensitivity=float(data.get("sensitivity", float("nan"))),
            false_positive_rate=float(data.get("false_positive_rate", float("nan"))),
            prior_strength=float(data.get("prior_strength", DEFAULT_PRIOR_STRENGTH)),
        )


def _triangle_from_rows(rows: Sequence[Sequence[float]], cap: int) -> NDArray[np.float64]:
    if len(rows) != cap + 1:
        raise ValueError(f"expected {cap + 1} rows for cap {cap}, got {len(rows)}")
    out = np.full((cap + 1, cap + 1), np.nan)
    for a, row in enumerate(rows):
        if len(row) != cap + 1 - a:
            raise ValueError(f"row a={a} must hold {cap + 1 - a} values, got {len(row)}")
        out[a, : cap + 1 - a] = row
    return out


def calibration_sample_size(
    n_candidates: int, fraction: float = 0.10, minimum: int = 20, maximum: int = 100
) -> int:
    """How many of a synset's candidates to calibrate on: a fraction, clamped, never more than exist."""
    wanted = int(np.ceil(fraction * n_candidates))
    return int(min(n_candidates, max(minimum, min(maximum, wanted))))


def reference_labels(
    sequences: Sequence[ArrayLike], gold: Sequence[bool | None] | None = None, tie_label: float = 0.5
) -> NDArray[np.float64]:
    """Reference label per calibration image in [0, 1]: gold where known, else majority vote (ties -> tie_label)."""
    labels = np.empty(len(sequences))
    for i, seq in enumerate(sequences):
        votes = np.asarray(seq, dtype=bool)
        yes = int(votes.sum())
        no = votes.size - yes
        labels[i] = 1.0 if yes > no else 0.0 if no > yes else tie_label
    if gold is not None:
        if len(gold) != len(sequences):
            raise ValueError("gold must give one entry (or None) per calibration image")
        for i, g in enumerate(gold):
            if g is not None:
                labels[i] = 1.0 if g else 0.0
    return labels


def fit_binomial_mixture(
    yes: NDArray[np.int64],
    total: NDArray[np.int64],
    init_labels: NDArray[np.float64],
    clamped: NDArray[np.bool_] | None = None,
    max_iter: int = 200,
    tol: float = 1e-9,
) -> MixtureFit:
    """EM for the latent-class binomial model; gold images keep their label (``clamped``).

    Add-one (Laplace) pseudo-counts keep every rate strictly inside (0, 1) however small the data.
    """
    yes = yes.astype(np.float64)
    total = total.astype(np.float64)
    no = total - yes
    resp = init_labels.astype(np.float64).copy()
    fixed = np.zeros(resp.shape, dtype=bool) if clamped is None else clamped
    prior = q1 = q0 = 0.5
    counts = (1.0, 1.0, 1.0, 1.0)
    iterations = 0
    for iteration in range(1, max_iter + 1):
        iterations = iteration
        prior = float((resp.sum() + 1.0) / (resp.size + 2.0))
        counts = (
            float(resp @ yes) + 1.0,
            float(resp @ no) + 1.0,
            float((1.0 - resp) @ yes) + 1.0,
            float((1.0 - resp) @ no) + 1.0,
        )
        q1 = counts[0] / (counts[0] + counts[1])
        q0 = counts[2] / (counts[2] + counts[3])
        if q1 < q0:
            # The initial labels were anti-correlated with the votes; the "positive" class must be the one that
            # draws more yes votes, so flip rather than converge to the mirrored solution.
            q1, q0, prior = q0, q1, 1.0 - prior
            counts = (counts[2], counts[3], counts[0], counts[1])
        logit = np.log(prior / (1 - prior)) + yes * np.log(q1 / q0) + no * np.log((1 - q1) / (1 - q0))
        new = np.where(fixed, resp, _expit(logit))
        delta = float(np.max(np.abs(new - resp))) if new.size else 0.0
        resp = new
        if delta < tol:
            break
    return MixtureFit(prior, *counts, iterations=iterations)


def _expit(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * x)))


def prefix_pattern_counts(
    sequences: Sequence[ArrayLike], labels: NDArray[np.float64], cap: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(positives, images) per pattern [a, b]: each prefix of each sequence, including the empty one, counts once."""
    n = len(sequences)
    padded = np.zeros((n, cap), dtype=np.int64)
    lengths = np.zeros(n, dtype=np.int64)
    for i, seq in enumerate(sequences):
        votes = np.asarray(seq, dtype=bool)[:cap]
        padded[i, : votes.size] = votes
        lengths[i] = votes.size
    yes_prefix = np.concatenate([np.zeros((n, 1), dtype=np.int64), np.cumsum(padded, axis=1)], axis=1)
    k = np.arange(cap + 1)[None, :]
    valid = k <= lengths[:, None]
    a = yes_prefix[valid]
    b = np.broadcast_to(k, valid.shape)[valid] - a
    weights = np.broadcast_to(labels[:, None], valid.shape)[valid]
    flat = a * (cap + 1) + b
    size = (cap + 1) * (cap + 1)
    positives = (
        np.bincount(flat, weights=weights, minlength=size).astype(np.float64).reshape(cap + 1, cap + 1)
    )
    images = np.bincount(flat, minlength=size).astype(np.float64).reshape(cap + 1, cap + 1)
    return positives, images


def build_table(
    sequences: Sequence[ArrayLike],
    gold: Sequence[bool | None] | None = None,
    *,
    cap: int = DEFAULT_CAP,
    prior_strength: float = DEFAULT_PRIOR_STRENGTH,
    max_concentration: float | None = DEFAULT_MAX_CONCENTRATION,
    tie_label: float = 0.5,
    reference: Reference = "majority",
) -> ConfidenceTable:
    """Build a smoothed, monotone confidence table from calibration vote sequences.

    ``sequences[i]`` holds image i's votes (True = yes) in arrival order; ``gold[i]`` its known answer or None.
    Refining a table as votes accumulate is rebuilding it from all of them: the estimate has no state beyond them.
    """
    if cap < 1:
        raise ValueError("cap must be at least 1")
    if prior_strength <= 0:
        raise ValueError("prior_strength must be positive so sparse patterns are smoothed")
    if not 0.0 <= tie_label <= 1.0:
        raise ValueError("tie_label must lie in [0, 1]")
    labels = reference_labels(sequences, gold, tie_label)
    yes = np.array([int(np.asarray(s, dtype=bool).sum()) for s in sequences], dtype=np.int64)
    total = np.array([np.asarray(s).size for s in sequences], dtype=np.int64)
    clamped = np.array([g is not None for g in gold], dtype=bool) if gold is not None else None
    mixture = fit_binomial_mixture(yes, total, labels, clamped)

    a_grid, b_grid = np.meshgrid(np.arange(cap + 1), np.arange(cap + 1), indexing="ij")
    inside = a_grid + b_grid <= cap
    prior_mean = _expit(mixture.log_odds(a_grid, b_grid, max_concentration))
    # Keep the prior itself inside (0, 1): with near-perfect voters the mixture odds overflow to exactly 1.0.
    prior_mean = np.clip(prior_mean, PROBABILITY_FLOOR, 1.0 - PROBABILITY_FLOOR)

    if reference == "posterior":
        soft = mixture.plug_in_posterior(yes, total - yes)
        labels = np.where(clamped, labels, soft) if clamped is not None else soft
    elif reference != "majority":
        raise ValueError(f"unknown reference {reference!r}")
    positives, images = prefix_pattern_counts(sequences, labels, cap)
    raw = (positives + prior_strength * prior_mean) / (images + prior_strength)
    weights = images + prior_strength
    monotone = bimonotone_projection(np.where(inside, raw, np.nan), np.where(inside, weights, 0.0))
    probabilities = np.where(inside, np.clip(monotone, PROBABILITY_FLOOR, 1.0 - PROBABILITY_FLOOR), np.nan)
    return ConfidenceTable(
        cap=cap,
        probabilities=probabilities,
        n_images=len(sequences),
        n_votes=int(total.sum()),
        prior=mixture.prior,
        counts=np.where(inside, images, np.nan),
        sensitivity=mixture.sensitivity,
        false_positive_rate=mixture.false_positive_rate,
        prior_strength=float(prior_strength),
    )


def pava(values: NDArray[np.float64], weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """Weighted isotonic (non-decreasing) regression by pool-adjacent-violators."""
    means: list[float] = []
    mass: list[float] = []
    sizes: list[int] = []
    for v, w in zip(values.tolist(), weights.tolist(), strict=True):
        means.append(v)
        mass.append(w)
        sizes.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            w_tot = mass[-2] + mass[-1]
            means[-2] = (means[-2] * mass[-2] + means[-1] * mass[-1]) / w_tot
            mass[-2] = w_tot
            sizes[-2] += sizes[-1]
            means.pop()
            mass.pop()
            sizes.pop()
    return np.repeat(np.array(means), sizes)


def bimonotone_projection(
    table: NDArray[np.float64], weights: NDArray[np.float64], max_iter: int = 500, tol: float = 1e-12
) -> NDArray[np.float64]:
    """Weighted L2 projection of a triangular table onto "non-decreasing in a, non-increasing in b".

    Dykstra's algorithm alternates the two exact 1-D projections (PAVA along each column, along each row) and
    converges to the projection onto their intersection; monotone along rows and columns of the triangle is the
    same as monotone in the (more yes, fewer no) partial order because any two comparable cells are joined by a
    row-then-column path that stays inside the triangle.
    """
    cap = table.shape[0] - 1
    x = np.where(np.isnan(table), 0.0, table)
    w = np.maximum(weights, 1e-12)
    p = np.zeros_like(x)
    q = np.zeros_like(x)
    for _ in range(max_iter):
        y = x + p
        u = y.copy()
        for b in range(cap + 1):  # non-decreasing in a at fixed b
            n = cap + 1 - b
            u[:n, b] = pava(y[:n, b], w[:n, b])
        p = y - u
        z = u + q
        new = z.copy()
        for a in range(cap + 1):  # non-increasing in b at fixed a
            n = cap + 1 - a
            new[a, :n] = pava(z[a, :n][::-1], w[a, :n][::-1])[::-1]
        q = z - new
        change = float(np.max(np.abs(new - x)))
        x = new
        if change < tol:
            break
    # Dykstra stops within tol of the projection; make the order exact so lookups can rely on it.
    for b in range(cap + 1):
        n = cap + 1 - b
        x[:n, b] = np.maximum.accumulate(x[:n, b])
    for a in range(cap + 1):
        n = cap + 1 - a
        x[a, :n] = np.minimum.accumulate(x[a, :n])
    return np.where(np.isnan(table), np.nan, x)


def is_monotone(table: ConfidenceTable, atol: float = 0.0) -> bool:
    """More yes never lowers P, more no never raises P, over every reachable pattern."""
    p = table.probabilities
    cap = table.cap
    for b in range(cap + 1):
        col = p[: cap + 1 - b, b]
        if np.any(np.diff(col) < -atol):
            return False
    for a in range(cap + 1):
        row = p[a, : cap + 1 - a]
        if np.any(np.diff(row) > atol):
            return False
    return True


def prior_table(*, accuracy: float, prior: float = 0.5, cap: int = DEFAULT_CAP) -> ConfidenceTable:
    """A table assumed rather than measured: every worker answers right with probability `accuracy`,
    independently, and P(positive) is `prior` (naive Bayes over the votes). Used where a question kind must be
    decidable before any calibration data exists (the box pipeline's questions, docs/boxes.md); a table
    measured from calibration votes replaces it as the newest one."""
    if not 0.5 < accuracy < 1.0 or not 0.0 < prior < 1.0:
        raise ValueError("accuracy must be in (0.5, 1) and prior in (0, 1)")
    a = np.arange(cap + 1, dtype=np.float64)[:, None]
    b = np.arange(cap + 1, dtype=np.float64)[None, :]
    log_odds = np.log(prior / (1 - prior)) + (a - b) * np.log(accuracy / (1 - accuracy))
    probabilities = 1.0 / (1.0 + np.exp(-log_odds))
    probabilities[(a + b) > cap] = np.nan
    return ConfidenceTable(
        cap=cap,
        probabilities=probabilities,
        n_images=0,
        n_votes=0,
        prior=prior,
        method=f"prior: independent workers of accuracy {accuracy:g}, P(positive) {prior:g}",
        sensitivity=accuracy,
        false_positive_rate=1 - accuracy,
    )
