"""Correlation-aware question order for Algorithm 1 (in the spirit of Deng et al. 2014, "Scalable multi-label
annotation": exploit correlation, hierarchy and sparsity). Owns the co-occurrence model and the order. Pure numpy.

The model estimates, for one image and the answers given so far, P(node present) for every node, where an
internal node is present when any leaf below it is. Estimate: the fraction of already-labelled training images
consistent with every answer so far (a "yes" node has a present leaf below it, a "no" node has none) in which
the node is present, shrunk towards a hierarchical prior by `alpha` pseudo-images. Unlike pairwise or naive-Bayes
approximations this conditions on all answers jointly; the shrinkage keeps it sane when few images match.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hierarchy.algorithm import LabelingState, QuestionDag, candidates


class CooccurrenceModel:
    """Co-occurrence statistics of the leaves of one DAG, fitted from a binary image x leaf matrix."""

    def __init__(self, dag: QuestionDag, leaf_ids: Sequence[str], matrix: np.ndarray, alpha: float = 4.0):
        labels = np.asarray(matrix, dtype=bool)
        if labels.ndim != 2 or labels.shape[1] != len(leaf_ids):
            raise ValueError(f"matrix must be images x {len(leaf_ids)} leaves, got shape {labels.shape}")
        missing = sorted(set(dag.leaves) - set(leaf_ids))
        if missing:
            raise ValueError(f"no training column for leaves {missing[:5]}")
        self.dag = dag
        self.alpha = alpha
        self.node_ids: tuple[str, ...] = tuple(dag)
        self.column = {node_id: i for i, node_id in enumerate(self.node_ids)}
        leaf_column = {leaf: i for i, leaf in enumerate(leaf_ids)}
        n_images, n_nodes = labels.shape[0], len(self.node_ids)
        present = np.zeros((n_images, n_nodes), dtype=bool)
        for node_id, j in self.column.items():
            cols = [leaf_column[leaf] for leaf in dag.leaves_under(node_id)]
            present[:, j] = labels[:, cols].any(axis=1)
        above = np.zeros((n_nodes, n_nodes), dtype=np.float32)  # above[i, j]: node i is an ancestor of j
        for node_id, j in self.column.items():
            for ancestor in dag.ancestors(node_id):
                above[self.column[ancestor], j] = 1.0
        # all_above[:, j]: every ancestor of node j is present (the image would reach j in Algorithm 1).
        missing_above = (~present).astype(np.float32) @ above
        all_above = missing_above == 0
        self.present = present
        self.present_f = present.astype(np.float32)
        self.all_above_f = all_above.astype(np.float32)
        self.above = above
        # Hierarchical prior: P(all ancestors present) and P(node present | all ancestors present), Laplace.
        self.prior_above = (all_above.sum(axis=0) + 1.0) / (n_images + 2.0)
        self.prior_given_above = (present.sum(axis=0) + 1.0) / (all_above.sum(axis=0) + 2.0)

    @classmethod
    def fit(
        cls, dag: QuestionDag, leaf_ids: Sequence[str], matrix: np.ndarray, alpha: float = 4.0
    ) -> CooccurrenceModel:
        return cls(dag, leaf_ids, matrix, alpha)

    def consistent_images(self, state: LabelingState) -> np.ndarray:
        """Boolean mask of training images that agree with every asked answer of `state`."""
        mask = np.ones(self.present.shape[0], dtype=bool)
        for node_id, present in state.answers:
            column = self.present[:, self.column[node_id]]
            mask &= column if present else ~column
        return mask

    def estimate(self, state: LabelingState) -> tuple[np.ndarray, np.ndarray]:
        """(P(node present), P(all ancestors of node present)) given the answers, aligned with `node_ids`."""
        mask = self.consistent_images(state)
        matched = float(mask.sum())
        if matched * 4 < mask.size:  # few images left once some answers are known: gather them
            rows = np.flatnonzero(mask)
            sum_above, sum_node = self.all_above_f[rows].sum(axis=0), self.present_f[rows].sum(axis=0)
        else:
            weights = mask.astype(np.float32)
            sum_above, sum_node = weights @ self.all_above_f, weights @ self.present_f
        p_above = (sum_above + self.alpha * self.prior_above) / (matched + self.alpha)
        # A node implies its ancestors, so P(node) = P(ancestors) * P(node | ancestors) for the prior.
        prior = p_above * self.prior_given_above
        p_node = (sum_node + self.alpha * prior) / (matched + self.alpha)
        if state.decisions:
            decided = np.fromiter((self.column[n] for n in state.decisions), dtype=np.intp)
            p_node[decided] = np.fromiter((d.present for d in state.decisions.values()), dtype=np.float32)
        return p_node, np.minimum(np.maximum(p_above, p_node), 1.0)


@dataclass
class CorrelationOrder:
    """Ask first what is likely "no" and prunes most, and take shortcuts to likely-"yes" nodes.

    Shortcut rule (expected questions saved): asking an undecided node d below the frontier costs one
    question now; plain Algorithm 1 would ask d anyway with probability P(all ancestors of d present), and a
    "yes" on d decides its k undecided ancestors, each of which Algorithm 1 would otherwise have asked.
    So the expected saving is P(ancestors present) + k * P(d present) - 1; the order asks the best shortcut
    when that saving exceeds `min_gain`, and otherwise the candidate with the largest expected pruning,
    P(no) * (1 + undecided descendants).
    """

    model: CooccurrenceModel
    shortcuts: bool = True
    min_gain: float = 0.05

    def __call__(self, state: LabelingState) -> str:
        model, dag = self.model, state.dag
        p_node, p_above = model.estimate(state)
        frontier = candidates(state)
        if self.shortcuts:
            open_nodes = np.ones(len(model.node_ids), dtype=np.float32)
            for node_id in state.decisions:
                open_nodes[model.column[node_id]] = 0.0
            undecided_above = open_nodes @ model.above  # k for every node
            gain = p_above + undecided_above * p_node - 1.0
            gain[open_nodes == 0] = -np.inf
            best = int(np.argmax(gain))
            if gain[best] > self.min_gain and undecided_above[best] > 0:
                return model.node_ids[best]

        # Among candidates, the one whose expected "no" removes the most undecided nodes: on a tree the order
        # of candidates does not change the count, but on a diamond asking the parent likely to be "no"
        # prunes the shared child unasked.
        def expected_pruned(node: str) -> float:
            below = sum(1 for d in dag.descendants(node) if d not in state.decisions)
            return (1.0 - float(p_node[model.column[node]])) * (1 + below)

        return min(frontier, key=lambda n: (-expected_pruned(n), dag.depth[n], dag.index[n]))
