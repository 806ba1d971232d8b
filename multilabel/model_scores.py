"""Algorithm 1 guided by a model's image-level class scores: the order that asks likely classes first, and the
calibrated rule that may answer an unlikely question "no" without asking it (a "skip"). Pure Python and numpy.

- Order (`ScoreOrder`): a node's score is the highest score of a leaf at or below it. Among the Algorithm 1
  candidates the highest-scored is asked first, so the ancestors leading to the likeliest classes come first; with
  a calibration, a leaf whose calibrated P(present) makes it worth a shortcut (Deng et al. 2014; the saving rule of
  multilabel/cooccurrence.py) is asked directly, and its "yes" decides its ancestors unasked.
- Skip rule (`SkipRule`): a candidate may be answered "no" unasked only when the upper confidence bound of
  P(present | score bucket) is below the target miss rate. P is estimated from images whose labels the crowd has
  already decided in this dataset (`calibration_fit`), separately for leaves and for higher questions, and only
  over (image, node) pairs where the node would be a candidate (a root, or a parent present): that is where the
  rule is applied, and a class under a present parent is far likelier than one anywhere. The bound is
  Clopper-Pearson's exact one-sided bound. Without calibration data no bucket has a bound below any target, so
  nothing is skipped. Every skip returns a `SkipDecision` (rule, score, bound, target, counts) for the audit trail.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hierarchy.algorithm import LabelingState, QuestionDag, candidates, next_question, skip

RULE = "score_bucket_clopper_pearson"
# Bucket edges on the score: bucket i holds edges[i] <= score < edges[i + 1] (the last also holds 1.0). Fine at
# the low end, where skips happen, so a bucket is not dragged up by the few present classes just above it.
EDGES: tuple[float, ...] = (
    0.0,
    0.0001,
    0.0002,
    0.0005,
    0.001,
    0.002,
    0.005,
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.3,
    0.5,
    0.7,
    0.9,
    1.0,
)
CONFIDENCE = 0.95


def clopper_pearson_upper(positives: int, observations: int, confidence: float = CONFIDENCE) -> float:
    """Exact one-sided upper bound on a binomial proportion: the p at which seeing at most `positives` in
    `observations` has probability 1 - confidence. 1.0 with no observations."""
    if observations <= 0 or positives >= observations:
        return 1.0
    alpha = 1.0 - confidence
    if positives == 0:
        return 1.0 - alpha ** (1.0 / observations)

    def cdf(p: float) -> float:  # P(X <= positives) for X ~ Binomial(observations, p), in log space
        log_p, log_q = math.log(p), math.log1p(-p)
        terms = [
            math.lgamma(observations + 1)
            - math.lgamma(k + 1)
            - math.lgamma(observations - k + 1)
            + k * log_p
            + (observations - k) * log_q
            for k in range(positives + 1)
        ]
        top = max(terms)
        return math.exp(top) * sum(math.exp(t - top) for t in terms)

    low, high = positives / observations, 1.0
    for _ in range(80):  # the cdf falls as p grows: bisect to 1e-24
        middle = (low + high) / 2
        if cdf(middle) > alpha:
            low = middle
        else:
            high = middle
    return high


def node_scores(dag: QuestionDag, leaf_scores: Mapping[str, float]) -> dict[str, float | None]:
    """Every node's score: the highest score of a leaf at or below it; None when a leaf below has no score (the
    model said nothing about it, so nothing bounds the node)."""
    scores: dict[str, float | None] = {}
    for node in dag:
        below = [leaf_scores.get(leaf) for leaf in dag.leaves_under(node)]
        scores[node] = (
            None if any(s is None for s in below) else max(float(s) for s in below if s is not None)
        )
    return scores


@dataclass(frozen=True)
class Bucket:
    low: float
    high: float
    positives: int
    observations: int
    bound: float  # upper confidence bound on P(present) in this bucket

    @property
    def rate(self) -> float:
        """The point estimate, shrunk by half a pseudo-observation each way (never 0 or 1)."""
        return (self.positives + 0.5) / (self.observations + 1.0)


@dataclass(frozen=True)
class ScoreCalibration:
    """P(present | score bucket) with upper bounds, from the crowd-decided labels of `images` images.

    `leaf` and `higher` are conditional on the node being a candidate (a root or a parent present); `anywhere`
    (leaves, unconditional) prices shortcuts."""

    images: int
    edges: tuple[float, ...]
    confidence: float
    leaf: tuple[Bucket, ...]
    higher: tuple[Bucket, ...]
    anywhere: tuple[Bucket, ...]

    def bucket_index(self, score: float) -> int:
        above = bisect.bisect_right(self.edges, score) - 1
        return max(0, min(above, len(self.edges) - 2))

    def bucket(self, score: float, leaf: bool) -> Bucket:
        return (self.leaf if leaf else self.higher)[self.bucket_index(score)]


def _buckets(
    scores: np.ndarray, present: np.ndarray, edges: tuple[float, ...], confidence: float
) -> tuple[Bucket, ...]:
    index = np.clip(np.searchsorted(edges, scores, side="right") - 1, 0, len(edges) - 2)
    out = []
    for i in range(len(edges) - 1):
        mask = index == i
        n, k = int(mask.sum()), int(present[mask].sum())
        out.append(Bucket(edges[i], edges[i + 1], k, n, clopper_pearson_upper(k, n, confidence)))
    return tuple(out)


def leaf_matrices(
    leaves: Sequence[str], decided: Sequence[tuple[Mapping[str, float], Mapping[str, bool]]]
) -> tuple[np.ndarray, np.ndarray]:
    """Decided images as two (images x leaves) matrices in `leaves`' order: each leaf's score (NaN where the
    model gave none) and its crowd label (1 present, 0 absent, -1 not decided by the crowd)."""
    column = {leaf: j for j, leaf in enumerate(leaves)}
    score = np.full((len(decided), len(leaves)), np.nan)
    label = np.full((len(decided), len(leaves)), -1, dtype=np.int8)
    for i, (leaf_scores, labels) in enumerate(decided):
        for leaf, value in leaf_scores.items():
            if leaf in column:
                score[i, column[leaf]] = value
        for leaf, present in labels.items():
            if leaf in column:
                label[i, column[leaf]] = 1 if present else 0
    return score, label


def calibration_fit(
    dag: QuestionDag,
    decided: Sequence[tuple[Mapping[str, float], Mapping[str, bool]]],
    edges: tuple[float, ...] = EDGES,
    confidence: float = CONFIDENCE,
) -> ScoreCalibration:
    """Fit from decided images, each (leaf scores, crowd-decided leaf labels). A leaf missing from the labels
    (decided by a skip, not by the crowd) is unknown: a node above it counts only if a known leaf below it is
    present (then it is present) or every leaf below it is known. Model-inferred labels never calibrate the model."""
    leaves = dag.leaves
    column = {leaf: j for j, leaf in enumerate(leaves)}
    n = len(decided)
    score, label = leaf_matrices(leaves, decided)
    node_score: dict[str, np.ndarray] = {}
    node_state: dict[str, np.ndarray] = {}  # 1 present, 0 absent, -1 unknown
    for node in dag:
        cols = [column[leaf] for leaf in dag.leaves_under(node)]
        sub = label[:, cols]
        state = np.where((sub == 1).any(axis=1), 1, np.where((sub == 0).all(axis=1), 0, -1))
        node_state[node] = state
        node_score[node] = score[:, cols].max(axis=1)  # NaN when any leaf below has no score
    pooled: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {
        k: ([], []) for k in ("leaf", "higher", "any")
    }
    for node in dag:
        known = (node_state[node] >= 0) & ~np.isnan(node_score[node])
        parents = dag.node(node).parents
        reachable = (
            np.ones(n, dtype=bool)
            if not parents
            else np.logical_or.reduce([node_state[p] == 1 for p in parents])
        )
        is_leaf = dag.node(node).leaf
        chosen = known & reachable
        group = pooled["leaf" if is_leaf else "higher"]
        group[0].append(node_score[node][chosen])
        group[1].append(node_state[node][chosen] == 1)
        if is_leaf:
            pooled["any"][0].append(node_score[node][known])
            pooled["any"][1].append(node_state[node][known] == 1)

    def table(key: str) -> tuple[Bucket, ...]:
        values, present = pooled[key]
        if not values:
            return _buckets(np.zeros(0), np.zeros(0, dtype=bool), edges, confidence)
        return _buckets(np.concatenate(values), np.concatenate(present), edges, confidence)

    return ScoreCalibration(n, tuple(edges), confidence, table("leaf"), table("higher"), table("any"))


@dataclass(frozen=True)
class SkipDecision:
    """Why one node was answered "no" without asking: the rule, the node's score, its bucket's counts and upper
    bound on P(present), the target it is below, and how many decided images calibrated it."""

    node: str
    rule: str
    score: float
    bound: float
    target: float
    positives: int
    observations: int
    images: int


@dataclass(frozen=True)
class SkipRule:
    """Skip a candidate when its bucket's upper bound on P(present) is below `target` (the dataset's miss rate)."""

    scores: Mapping[str, float | None]
    calibration: ScoreCalibration
    target: float

    def check(self, state: LabelingState, node: str) -> SkipDecision | None:
        score = self.scores.get(node)
        if score is None or node not in candidates(state):
            return None
        bucket = self.calibration.bucket(score, state.dag.node(node).leaf)
        if bucket.bound >= self.target:
            return None
        return SkipDecision(
            node=node,
            rule=RULE,
            score=float(score),
            bound=bucket.bound,
            target=self.target,
            positives=bucket.positives,
            observations=bucket.observations,
            images=self.calibration.images,
        )


@dataclass
class ScoreOrder:
    """Likeliest first: a shortcut to a leaf when calibrated P(present) makes it pay (expected questions saved,
    (k + 1) * P - 1 > min_gain with k undecided ancestors, P(ancestors) >= P(leaf)), else the candidate with the
    highest score; unscored nodes after scored ones, ties breadth-first."""

    scores: Mapping[str, float | None]
    calibration: ScoreCalibration | None = None
    min_gain: float = 0.05

    def __call__(self, state: LabelingState) -> str:
        dag = state.dag
        if self.calibration is not None:
            best, best_gain = None, self.min_gain
            for leaf in dag.leaves:
                score = self.scores.get(leaf)
                if score is None or leaf in state.decisions:
                    continue
                above = sum(1 for a in dag.ancestors(leaf) if a not in state.decisions)
                if above == 0:
                    continue  # a candidate already: no shortcut
                p = self.calibration.anywhere[self.calibration.bucket_index(score)].rate
                gain = (above + 1) * p - 1.0
                if gain > best_gain:
                    best, best_gain = leaf, gain
            if best is not None:
                return best

        def key(node: str) -> tuple[float, int, int]:
            score = self.scores.get(node)
            return (-(score if score is not None else -1.0), dag.depth[node], dag.index[node])

        return min(candidates(state), key=key)


def advance(
    state: LabelingState, order: ScoreOrder, rule: SkipRule | None
) -> tuple[LabelingState, str | None, list[SkipDecision]]:
    """Skip every candidate the rule allows (a skip may bring no new candidates: it only decides "no"), then pick
    the next question. Returns the new state, the node to ask (None when every node is decided) and the skips."""
    skips: list[SkipDecision] = []
    if rule is not None:
        for node in candidates(state):
            if node in state.decisions:
                continue  # decided by an earlier skip of this pass (a node with two parents)
            decision = rule.check(state, node)
            if decision is not None:
                state = skip(state, node)
                skips.append(decision)
    return state, next_question(state, order), skips
