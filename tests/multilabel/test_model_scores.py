"""Algorithm 1 guided by class scores, pure: the score order, the skip rule's Clopper-Pearson bound, no skip without
calibration data, and skips recorded and marked model-inferred in the labeling state."""

from __future__ import annotations

import math

import pytest

from hierarchy.algorithm import LabelingState, QuestionDag, QuestionNode, Source, answer, skip, start
from multilabel.model_scores import (
    RULE,
    ScoreOrder,
    SkipRule,
    advance,
    calibration_fit,
    clopper_pearson_upper,
    node_scores,
)

DAG = QuestionDag(
    [
        QuestionNode("q:animal"),
        QuestionNode("q:vehicle"),
        QuestionNode("q:pet", ("q:animal",)),
        QuestionNode("dog", ("q:animal", "q:pet"), leaf=True),
        QuestionNode("cat", ("q:pet",), leaf=True),
        QuestionNode("car", ("q:vehicle",), leaf=True),
        QuestionNode("person", (), leaf=True),
    ]
)
LOW = {"dog": 0.0003, "cat": 0.0003, "car": 0.9, "person": 0.0003}


def binomial_cdf(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


@pytest.mark.parametrize("positives,observations", [(0, 10), (0, 600), (3, 50), (20, 1000), (9, 10)])
def test_clopper_pearson_upper_leaves_exactly_alpha_below_it(positives, observations):
    bound = clopper_pearson_upper(positives, observations, confidence=0.95)
    assert positives / observations < bound < 1.0
    assert binomial_cdf(positives, observations, bound) == pytest.approx(0.05, rel=1e-6)


def test_clopper_pearson_upper_knows_nothing_without_observations_and_shrinks_with_more():
    assert clopper_pearson_upper(0, 0) == 1.0
    assert clopper_pearson_upper(0, 10) == pytest.approx(1 - 0.05 ** (1 / 10))
    assert clopper_pearson_upper(0, 600) < 0.005 < clopper_pearson_upper(0, 590)


def test_node_score_is_the_best_leaf_below_and_unknown_when_a_leaf_has_no_score():
    scores = node_scores(DAG, LOW)
    assert scores["q:vehicle"] == 0.9 and scores["q:animal"] == 0.0003 and scores["person"] == 0.0003
    partial = node_scores(DAG, {"dog": 0.5, "car": 0.1, "person": 0.2})
    assert partial["q:pet"] is None and partial["q:animal"] is None and partial["dog"] == 0.5


def test_score_order_asks_the_way_to_the_likeliest_class_first():
    order = ScoreOrder(node_scores(DAG, {"dog": 0.1, "cat": 0.7, "car": 0.3, "person": 0.05}))
    state = start(DAG)
    assert order(state) == "q:animal"
    state = answer(state, "q:animal", True)
    assert order(state) == "q:pet"  # leads to cat (0.7), before car's vehicle (0.3) and dog (0.1)
    state = answer(state, "q:pet", True)
    assert order(state) == "cat"


def decided(n: int, present_scores: float = 0.9, absent_scores: float = 0.0003):
    """n images with only a car, scored LOW-like, as the crowd decided them."""
    scores = {"dog": absent_scores, "cat": absent_scores, "car": present_scores, "person": absent_scores}
    labels = {"dog": False, "cat": False, "car": True, "person": False}
    return [(scores, labels)] * n


def test_nothing_is_skipped_without_calibration_data_only_ordered():
    calibration = calibration_fit(DAG, [])
    assert calibration.images == 0
    assert all(b.bound == 1.0 for b in calibration.leaf + calibration.higher)
    rule = SkipRule(node_scores(DAG, LOW), calibration, target=0.005)
    state, node, skips = advance(start(DAG), ScoreOrder(node_scores(DAG, LOW)), rule)
    assert skips == [] and node == "q:vehicle" and not state.skipped


def test_a_skip_happens_only_where_the_buckets_upper_bound_is_below_the_target_and_is_recorded():
    calibration = calibration_fit(DAG, decided(700))
    by_node = node_scores(DAG, LOW)
    rule = SkipRule(by_node, calibration, target=0.005)
    state, node, skips = advance(start(DAG), ScoreOrder(by_node, calibration), rule)
    assert {s.node for s in skips} == {"q:animal", "person"}
    for decision in skips:
        bucket = calibration.bucket(decision.score, DAG.node(decision.node).leaf)
        assert decision.rule == RULE and decision.score == 0.0003 and decision.target == 0.005
        assert decision.bound == clopper_pearson_upper(bucket.positives, bucket.observations) < 0.005
        assert (decision.positives, decision.observations, decision.images) == (0, 700, 700)
    assert node in ("q:vehicle", "car")  # the likely class is still asked
    assert state.decisions["q:animal"].source == Source.SKIPPED
    assert (
        state.decisions["dog"].source == Source.NO_FROM_SKIPPED and state.decisions["dog"].via == "q:animal"
    )
    assert state.decisions["person"].source == Source.SKIPPED and state.answers == ()
    # Too few decided images: the same zero-positive bucket's bound is above the target, nothing skipped.
    few = calibration_fit(DAG, decided(500))
    assert advance(start(DAG), ScoreOrder(by_node, few), SkipRule(by_node, few, 0.005))[2] == []


def test_a_bucket_with_present_classes_is_not_skipped_though_most_of_it_is_absent():
    present_low = [
        (
            {"dog": 0.0003, "cat": 0.0003, "car": 0.9, "person": 0.0003},
            {"dog": False, "cat": False, "car": True, "person": True},
        )
    ] * 10
    calibration = calibration_fit(DAG, decided(2000) + present_low)
    bucket = calibration.bucket(0.0003, leaf=True)
    assert bucket.positives == 10 and bucket.bound > 0.005
    by_node = node_scores(DAG, LOW)
    skips = advance(start(DAG), ScoreOrder(by_node), SkipRule(by_node, calibration, 0.005))[2]
    assert "person" not in {s.node for s in skips}


def test_leaves_are_calibrated_only_where_a_parent_is_present_and_model_inferred_labels_never_count():
    # The car is present in every image: its leaf pairs count; dog and cat sit under an absent parent and do not.
    calibration = calibration_fit(DAG, decided(10))
    assert sum(b.observations for b in calibration.leaf) == 20  # car and person (a root) per image
    # A label decided by a skip (missing from the crowd's labels) makes the leaf and the nodes above it unknown.
    skipped_person = [({**LOW}, {"dog": False, "cat": False, "car": True})] * 10
    assert sum(b.observations for b in calibration_fit(DAG, skipped_person).leaf) == 10


def test_skips_survive_saving_and_rewinding_the_state():
    state = answer(skip(start(DAG), "person"), "q:animal", False)
    state = skip(state, "q:vehicle")
    data = state.to_dict()
    assert data["skipped"] == [{"node": "person", "after": 0}, {"node": "q:vehicle", "after": 1}]
    again = LabelingState.from_dict(data, DAG)
    assert again.decisions == state.decisions and again.skipped == state.skipped
    before = state.truncated(0)
    assert before.skipped == (("person", 0),) and before.answers == () and "q:animal" not in before.decisions
    assert "skipped" not in answer(start(DAG), "q:animal", False).to_dict()  # today's states are unchanged
