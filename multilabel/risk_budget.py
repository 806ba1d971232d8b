"""A per-image risk budget for Algorithm 1 guided by a model's scores: answer "no" without asking to whole
subtrees whose calibrated chance of holding a present class is small, spending one image's share of the
dataset's miss rate across its skips (a union bound). Pure Python and numpy.

Why a budget. The per-question rule of multilabel/model_scores.py skips a candidate only when its own bound is
below the miss rate; a high-level question's score (its best leaf's) is rarely that low, so Algorithm 1 still
asks nearly every "no" that bounds a subtree. Here the risks of all the skips of one image add up instead: the
expected number of present subtrees skipped on an image is at most the sum of their risks, so a budget of
`miss_rate` x (present classes per image) keeps the expected share of present classes lost to skips near
`miss_rate` (a skipped subtree may hold two classes: the bench measures recall, not only the bound).

The risk of a node (ILSVRC §3.3.3's candidates: a root, or a node with a present parent):
- r(node) = the sum over the undecided leaves below it of P(leaf present | its score), from the decided images
  of the dataset: the class's prior odds (its share present, shrunk towards the pooled share) times its score
  bucket's likelihood ratio (model_scores.EDGES, pooled over classes): the model's expected count of present
  classes below the node.
- a root's feature is r(node); a node under a present parent's is r(node) / r(parent) over every leaf below the
  parent (the present parent with the least r: the most conservative), the node's share of the parent's
  expected count, since a present parent holds at least one present class.
- P(present | feature) is binned on the feature (`FEATURE_EDGES`), per context (root, child), over the decided
  images' candidates, and the node's risk is its bin's Clopper-Pearson upper bound (`confidence`). Only labels
  the crowd decided calibrate it (a leaf decided by a skip is unknown), as in model_scores.calibration_fit.

Why bins and not a ratio. The feature is the model's expected count, yet the decided images say P(present) is
not proportional to it at the low end: a class the model scores low is still present a few times in a hundred
(the model's misses), so P(present) has a floor that a fitted ratio, dominated by the larger features, would
put ten to fifty times too low (bench/multilabel_cost.py measured it; docs/hierarchy.md has the table). Nor is
it monotone across subtrees of different sizes, so bins are not pooled either.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hierarchy.algorithm import LabelingState, QuestionDag, candidates, next_question, skip

from .model_scores import CONFIDENCE, EDGES, Bucket, ScoreOrder, SkipDecision, _buckets, leaf_matrices

RULE = "risk_budget_union_bound"
DEFAULT_CAP = 0.05  # a node whose feature is above this is never skipped
PRIOR_STRENGTH = 20.0  # pseudo-images pulling a class's prior towards the pooled rate
DEFAULT_MISS_RATE = 0.005  # the share of present classes the skips may lose (multilabel/asking.py's leaf bar)


# Bins on the feature (a root's expected count, a child's share of its parent's): bin i holds edges[i] <= f <
# edges[i + 1]. Fine at the low end, where skips happen.
FEATURE_EDGES: tuple[float, ...] = (0.0, 1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0)


@dataclass(frozen=True)
class RiskCalibration:
    images: int
    edges: tuple[float, ...]
    confidence: float
    cap: float
    leaf: tuple[Bucket, ...]  # P(leaf present | its score bucket), pooled over the classes
    likelihood_ratio: tuple[float, ...]  # P(bucket | present) / P(bucket | absent), pooled
    class_prior: Mapping[str, float]  # P(class present), each class shrunk towards the pooled rate
    pooled_prior: float
    root: tuple[Bucket, ...]  # P(present | feature), roots
    child: tuple[Bucket, ...]  # P(present | feature), nodes under a present parent
    classes_per_image: float  # present leaves per decided image (crowd-decided leaves only)

    def leaf_rate(self, leaf: str, score: float) -> float:
        """P(leaf present | its score): the class's prior odds times its score bucket's likelihood ratio."""
        index = int(np.clip(np.searchsorted(self.edges, score, side="right") - 1, 0, len(self.edges) - 2))
        prior = self.class_prior.get(leaf, self.pooled_prior)
        odds = prior / (1.0 - prior) * self.likelihood_ratio[index]
        return odds / (1.0 + odds)

    def feature_bucket(self, feature: float, root: bool) -> Bucket:
        index = int(
            np.clip(np.searchsorted(FEATURE_EDGES, feature, side="right") - 1, 0, len(FEATURE_EDGES) - 2)
        )
        return (self.root if root else self.child)[index]


def risk_fit(
    dag: QuestionDag,
    decided: Sequence[tuple[Mapping[str, float], Mapping[str, bool]]],
    edges: tuple[float, ...] = EDGES,
    confidence: float = CONFIDENCE,
    cap: float = DEFAULT_CAP,
) -> RiskCalibration:
    """Fit from decided images, each (leaf scores, crowd-decided leaf labels)."""
    leaves = dag.leaves
    column = {leaf: j for j, leaf in enumerate(leaves)}
    n = len(decided)
    score, label = leaf_matrices(leaves, decided)
    known = (label >= 0) & ~np.isnan(score)
    leaf_table = _buckets(score[known], label[known] == 1, edges, confidence)
    # Pooled over classes, a bucket's rate is wrong for a common class (a person) and a rare one alike; the
    # score's likelihood ratio pools well, the prior is each class's own (shrunk: PRIOR_STRENGTH pseudo-images).
    k_all, n_all = sum(b.positives for b in leaf_table), sum(b.observations for b in leaf_table)
    half = 0.5 * len(leaf_table)
    lr = tuple(
        ((b.positives + 0.5) / (k_all + half))
        / ((b.observations - b.positives + 0.5) / (n_all - k_all + half))
        for b in leaf_table
    )
    pooled_prior = (k_all + 0.5) / (n_all + 1.0)
    per_class = ((label == 1) & known).sum(axis=0), known.sum(axis=0)
    prior = (per_class[0] + PRIOR_STRENGTH * pooled_prior) / (per_class[1] + PRIOR_STRENGTH)
    index = np.clip(
        np.searchsorted(edges, np.nan_to_num(score, nan=1.0), side="right") - 1, 0, len(edges) - 2
    )
    odds = (prior / (1.0 - prior))[None, :] * np.array(lr)[index]
    rates = odds / (1.0 + odds)
    rates[np.isnan(score)] = np.inf  # no score: nothing bounds a node above it
    mass: dict[str, np.ndarray] = {}
    state: dict[str, np.ndarray] = {}
    for node in dag:
        cols = [column[leaf] for leaf in dag.leaves_under(node)]
        sub = label[:, cols]
        state[node] = np.where((sub == 1).any(axis=1), 1, np.where((sub == 0).all(axis=1), 0, -1))
        mass[node] = rates[:, cols].sum(axis=1)
    pooled: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {"root": ([], []), "child": ([], [])}
    for node in dag:
        parents = dag.node(node).parents
        if not parents:
            context, feature, reachable = "root", mass[node], np.ones(n, dtype=bool)
        else:
            parent_mass = np.full(n, np.inf)
            for p in parents:
                parent_mass = np.where(state[p] == 1, np.minimum(parent_mass, mass[p]), parent_mass)
            reachable = np.isfinite(parent_mass)
            with np.errstate(invalid="ignore", divide="ignore"):
                feature = np.where(reachable, mass[node] / np.where(reachable, parent_mass, 1.0), np.inf)
            context = "child"
        chosen = reachable & (state[node] >= 0) & np.isfinite(feature)
        pooled[context][0].append(feature[chosen])
        pooled[context][1].append(state[node][chosen] == 1)

    def fitted(context: str) -> tuple[Bucket, ...]:
        values, present = pooled[context]
        if not values:
            return _buckets(np.zeros(0), np.zeros(0, dtype=bool), FEATURE_EDGES, confidence)
        return _buckets(np.concatenate(values), np.concatenate(present), FEATURE_EDGES, confidence)

    decided_leaves = label >= 0
    per_image = float((label == 1).sum() / n) if n and decided_leaves.any() else 0.0
    return RiskCalibration(
        images=n,
        edges=tuple(edges),
        confidence=confidence,
        cap=cap,
        leaf=leaf_table,
        likelihood_ratio=lr,
        class_prior={leaf: float(prior[j]) for j, leaf in enumerate(leaves)},
        pooled_prior=pooled_prior,
        root=fitted("root"),
        child=fitted("child"),
        classes_per_image=per_image,
    )


@dataclass(frozen=True)
class BudgetRule:
    """One image's skips under a risk budget: `miss_rate` x the calibration's present classes per image."""

    leaf_scores: Mapping[str, float]
    calibration: RiskCalibration
    miss_rate: float = DEFAULT_MISS_RATE

    @property
    def budget(self) -> float:
        return self.miss_rate * self.calibration.classes_per_image

    def _mass(self, state: LabelingState, node: str, undecided_only: bool) -> float:
        total = 0.0
        for leaf in state.dag.leaves_under(node):
            if undecided_only and leaf in state.decisions:
                continue
            score = self.leaf_scores.get(leaf)
            if score is None:
                return math.inf
            total += self.calibration.leaf_rate(leaf, float(score))
        return total

    def risk(self, state: LabelingState, node: str) -> tuple[float, Bucket | None]:
        """The node's calibrated risk (its feature bin's upper bound on P(present)) and the bin; inf when the
        node is no candidate, a leaf below it has no score or its feature is above the cap."""
        dag = state.dag
        parents = dag.node(node).parents
        mass = self._mass(state, node, undecided_only=True)
        if not parents:
            feature = mass
        else:
            if not any((d := state.decisions.get(p)) is not None and d.present for p in parents):
                return math.inf, None
            # Every parent, not only those decided present so far: the calibration's feature takes the least
            # r over the parents present in a decided image, and an undecided parent here may be one of them.
            parent_mass = min(self._mass(state, p, undecided_only=False) for p in parents)
            feature = mass / parent_mass if parent_mass > 0 else math.inf
        if not feature <= self.calibration.cap:
            return math.inf, None
        bucket = self.calibration.feature_bucket(feature, root=not parents)
        return bucket.bound, bucket

    def plan(self, state: LabelingState, spent: float) -> tuple[LabelingState, list[SkipDecision], float]:
        """Skip the current candidates, least risky first, while the image's budget lasts."""
        budget = self.budget
        ranked = sorted(
            ((*self.risk(state, node), node) for node in candidates(state)), key=lambda r: (r[0], r[2])
        )
        skips: list[SkipDecision] = []
        for risk, bucket, node in ranked:
            if node in state.decisions:
                continue
            if bucket is None or spent + risk > budget:
                break
            state = skip(state, node)
            spent += risk
            best = max(
                (self.leaf_scores.get(leaf, 1.0) for leaf in state.dag.leaves_under(node)), default=0.0
            )
            skips.append(
                SkipDecision(
                    node=node,
                    rule=RULE,
                    score=float(best),
                    bound=risk,
                    target=budget,
                    positives=bucket.positives,
                    observations=bucket.observations,
                    images=self.calibration.images,
                )
            )
        return state, skips, spent


def advance_budget(
    state: LabelingState, order: ScoreOrder, rule: BudgetRule | None, spent: float = 0.0
) -> tuple[LabelingState, str | None, list[SkipDecision], float]:
    """Skip what the image's remaining budget allows, then pick the next question. `spent`: the risk of the
    image's earlier skips (the sum of their recorded bounds). Returns the state, the node to ask (None when
    every node is decided), the skips and the budget spent so far."""
    skips: list[SkipDecision] = []
    if rule is not None:
        state, skips, spent = rule.plan(state, spent)
    return state, next_question(state, order), skips, spent
