"""Correlation-aware order: estimates follow the data, and it saves questions on correlated data."""

import numpy as np

from hierarchy.algorithm import (
    QuestionDag,
    QuestionNode,
    answer,
    breadth_first,
    candidates,
    is_done,
    leaf_labels,
    run,
    start,
)
from multilabel.cooccurrence import CooccurrenceModel, CorrelationOrder


def paired_dag() -> QuestionDag:
    # Two groups sharing every leaf (diamonds): "outdoor" and "animal" views of the same four classes.
    nodes = [QuestionNode("outdoor"), QuestionNode("animal"), QuestionNode("indoor")]
    nodes += [QuestionNode(f"a{i}", ("outdoor", "animal"), leaf=True) for i in range(4)]
    nodes += [QuestionNode(f"b{i}", ("outdoor",), leaf=True) for i in range(4)]
    nodes += [QuestionNode(f"c{i}", ("indoor",), leaf=True) for i in range(4)]
    return QuestionDag(nodes)


def synthetic(dag: QuestionDag, n: int, seed: int) -> np.ndarray:
    """Outdoor images hold b-classes (animals are rare); indoor images hold c-classes."""
    rng = np.random.default_rng(seed)
    leaves = list(dag.leaves)
    data = np.zeros((n, len(leaves)), dtype=bool)
    for i in range(n):
        group = "b" if rng.random() < 0.5 else "c"
        for k in rng.choice(4, size=rng.integers(1, 3), replace=False):
            data[i, leaves.index(f"{group}{k}")] = True
        if group == "b" and rng.random() < 0.05:
            data[i, leaves.index(f"a{rng.integers(4)}")] = True
    return data


def questions_asked(dag, data, order) -> int:
    total = 0
    for row in data:
        present = {leaf for leaf, on in zip(dag.leaves, row, strict=True) if on}
        state = run(
            start(dag), lambda n, present=present: bool(present & (set(dag.leaves_under(n)) | {n})), order
        )
        assert is_done(state)
        assert {leaf for leaf, lab in leaf_labels(state).items() if lab.present} == present
        total += len(state.answers)
    return total


def test_estimates_condition_on_answers():
    dag = paired_dag()
    model = CooccurrenceModel.fit(dag, dag.leaves, synthetic(dag, 400, 0))
    column = model.column
    state = answer(start(dag), "indoor", True)
    p_node, _ = model.estimate(state)
    assert p_node[column["outdoor"]] < 0.1  # in this data indoor and outdoor never meet
    assert p_node[column["indoor"]] == 1.0
    state = answer(start(dag), "indoor", False)
    p_node, _ = model.estimate(state)
    assert p_node[column["outdoor"]] > 0.9


def test_estimates_fall_back_to_the_prior_when_no_image_matches():
    dag = paired_dag()
    model = CooccurrenceModel.fit(dag, dag.leaves, synthetic(dag, 400, 0))
    state = answer(answer(start(dag), "indoor", True), "outdoor", True)  # never seen together
    p_node, _ = model.estimate(state)
    assert np.all((p_node >= 0) & (p_node <= 1)) and np.isfinite(p_node).all()


def test_correlation_order_asks_fewer_questions_than_breadth_first_on_correlated_data():
    dag = paired_dag()
    model = CooccurrenceModel.fit(dag, dag.leaves, synthetic(dag, 600, 1))
    test = synthetic(dag, 200, 2)
    bfs = questions_asked(dag, test, breadth_first)
    correlated = questions_asked(dag, test, CorrelationOrder(model))
    assert correlated < 0.95 * bfs


def test_correlation_order_never_asks_below_a_no():
    dag = paired_dag()
    model = CooccurrenceModel.fit(dag, dag.leaves, synthetic(dag, 300, 3))
    order = CorrelationOrder(model)
    state = answer(start(dag), "outdoor", False)
    while not is_done(state):
        node = order(state)
        assert not (dag.ancestors(node) & {"outdoor"})
        state = answer(state, node, False)
    assert candidates(state) == ()
