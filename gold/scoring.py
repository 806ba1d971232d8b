"""Worker accuracy from gold answers: a Beta posterior per worker and task kind, its credible lower bound, and
the blocking and bonus rules built on it. Pure numpy; no Django.

Model: each gold answer is correct with the worker's accuracy `acc`; with a Beta(a, b) prior, after `k` correct
out of `n` the posterior is Beta(a + k, b + n - k) (the conjugate update). Blocking asks how sure we are that
`acc` is below the threshold: P(acc < threshold | answers) > confidence, and at least `min_answers` answers, so
one early slip never blocks anyone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DEFAULT_PRIOR = (2.0, 1.0)  # mean 2/3, worth 3 answers: weak, so gold evidence dominates quickly
# Blocking: P(accuracy < 0.8) > 0.99 over all the worker's gold answers in the dataset. The old 0.7 / 0.975 never
# blocked a worker at 16 of 27 right (the random worker; a weak worker near 0.6 looks the same). Of the
# rules that block 16 of 27, this one blocked the fewest honest workers in bench/gold_cost.py (docs/gold.md).
DEFAULT_BLOCK_THRESHOLD = 0.8
DEFAULT_BLOCK_CONFIDENCE = 0.993  # 16 of 27 right gives P(accuracy < 0.8) = 0.99306: blocked
DEFAULT_MIN_ANSWERS = 10  # 5 blocked honest workers on early streaks (4 of 10 right at accuracy 0.84)
# Drawers: the share of their boxes the quality question accepts. Spammers' random boxes are almost all
# rejected; careful drawers lose some small objects to jitter, so the bar is a coin's, not a voter's.
DEFAULT_DRAW_BLOCK_THRESHOLD = 0.5
DEFAULT_BONUS_LOWER = 0.9  # bonus when the 95% lower bound of accuracy is above this
DEFAULT_LOWER_LEVEL = 0.05
# Qualification: a fixed set answered once; passing must be unlikely for a worker answering at random.
DEFAULT_QUALIFICATION_SIZE = 14
DEFAULT_QUALIFICATION_PASS = 12  # P(pass | accuracy 0.5) = 106 / 16384 = 0.65%; 84% pass at accuracy 0.9
DEFAULT_QUALIFICATION_ATTEMPTS = 3  # each on fresh items, after a cool-down
DEFAULT_QUALIFICATION_COOLDOWN = 600  # seconds before a failed attempt may be retried
DEFAULT_QUALIFICATION_CHANCE = 0.01  # the most a coin-flipper may pass one attempt with


@dataclass(frozen=True)
class Prior:
    a: float = DEFAULT_PRIOR[0]
    b: float = DEFAULT_PRIOR[1]

    def __post_init__(self) -> None:
        if not (self.a > 0 and self.b > 0):
            raise ValueError("a Beta prior needs a > 0 and b > 0")


@dataclass(frozen=True)
class BlockRule:
    threshold: float = DEFAULT_BLOCK_THRESHOLD
    confidence: float = DEFAULT_BLOCK_CONFIDENCE
    min_answers: int = DEFAULT_MIN_ANSWERS


@dataclass(frozen=True)
class Score:
    answered: int
    correct: int
    mean: float  # posterior mean of accuracy
    lower: float  # lower end of the one-sided credible interval at DEFAULT_LOWER_LEVEL
    p_below: float  # P(accuracy < the block threshold)
    blocked: bool


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes §6.4)."""
    tiny, eps = 1e-300, 3e-14
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def beta_cdf(x: float, a: float, b: float) -> float:
    """P(X <= x) for X ~ Beta(a, b): the regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def beta_quantile(q: float, a: float, b: float) -> float:
    """The x with I_x(a, b) = q, by bisection (60 halvings: exact to double precision on [0, 1])."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if beta_cdf(mid, a, b) < q:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def score(correct: int, answered: int, prior: Prior = Prior(), rule: BlockRule = BlockRule()) -> Score:
    """The posterior summary of one worker on one task kind after `correct` of `answered` gold answers."""
    if not 0 <= correct <= answered:
        raise ValueError("need 0 <= correct <= answered")
    a, b = prior.a + correct, prior.b + answered - correct
    p_below = beta_cdf(rule.threshold, a, b)
    return Score(
        answered=answered,
        correct=correct,
        mean=a / (a + b),
        lower=beta_quantile(DEFAULT_LOWER_LEVEL, a, b),
        p_below=p_below,
        blocked=answered >= rule.min_answers and p_below > rule.confidence,
    )


def scores(
    correct: np.ndarray, answered: np.ndarray, prior: Prior = Prior(), rule: BlockRule = BlockRule()
) -> list[Score]:
    """`score` for many workers at once (arrays of equal length)."""
    correct, answered = np.asarray(correct, dtype=int), np.asarray(answered, dtype=int)
    if correct.shape != answered.shape:
        raise ValueError("correct and answered must have the same shape")
    return [score(int(k), int(n), prior, rule) for k, n in zip(correct, answered, strict=True)]


def answers_to_block(
    accuracy_of_answers: float, prior: Prior = Prior(), rule: BlockRule = BlockRule()
) -> int:
    """The fewest gold answers after which a worker who gets exactly the expected share right is blocked
    (None-like -1 when never): a planning figure for the docs and the benchmark."""
    for n in range(1, 1000):
        k = int(round(accuracy_of_answers * n))
        if score(k, n, prior, rule).blocked:
            return n
    return -1


def bonus_due(s: Score, lower_above: float = DEFAULT_BONUS_LOWER) -> bool:
    return not s.blocked and s.lower > lower_above


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return float(sum(math.comb(n, i) * p**i * (1.0 - p) ** (n - i) for i in range(k, n + 1)))


def qualification_chance(size: int, passing: int, accuracy: float = 0.5) -> float:
    """The chance that a worker right with probability `accuracy` on each item passes one qualification
    attempt of `size` items needing `passing` right (a fixed set, each item answered once)."""
    return binomial_tail(passing, size, accuracy)


def qualification_pass_needed(size: int, chance: float = DEFAULT_QUALIFICATION_CHANCE) -> int | None:
    """The fewest right answers out of `size` that a coin-flipper reaches with probability below `chance`
    (None when even `size` of `size` is too likely: the set is too small)."""
    for k in range(size + 1):
        if qualification_chance(size, k) < chance:
            return k
    return None
