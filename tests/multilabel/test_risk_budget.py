"""The per-image risk budget of multilabel/risk_budget.py, pure: a leaf's rate is its class's prior odds times
its score's likelihood ratio, a node's risk is its feature bin's upper bound, skips stop when the image's budget
is spent (each recorded with its bound and the budget), and nothing is skipped without calibration data."""

from __future__ import annotations

import pytest

from hierarchy.algorithm import QuestionDag, QuestionNode, Source, answer, start
from multilabel.model_scores import ScoreOrder, clopper_pearson_upper, node_scores
from multilabel.risk_budget import RULE, BudgetRule, advance_budget, risk_fit

DAG = QuestionDag(
    [
        QuestionNode("q:animal"),
        QuestionNode("q:vehicle"),
        QuestionNode("q:pet", ("q:animal",)),
        QuestionNode("dog", ("q:animal", "q:pet"), leaf=True),
        QuestionNode("cat", ("q:pet",), leaf=True),
        QuestionNode("car", ("q:vehicle",), leaf=True),
        QuestionNode("bus", ("q:vehicle",), leaf=True),
        QuestionNode("person", (), leaf=True),
    ]
)
LOW, HIGH = 0.0003, 0.9


def images(n: int, person_every: int = 0):
    """n decided images, each with a car scored HIGH and every other class scored LOW; a person (scored LOW:
    the model misses them) in every `person_every`-th image."""
    out = []
    for i in range(n):
        person = bool(person_every) and i % person_every == 0
        scores = {"dog": LOW, "cat": LOW, "car": HIGH, "bus": LOW, "person": LOW}
        labels = {"dog": False, "cat": False, "car": True, "bus": False, "person": person}
        out.append((scores, labels))
    return out


def test_a_leaf_rate_is_its_class_prior_odds_times_the_score_likelihood_ratio():
    calibration = risk_fit(DAG, images(400, person_every=10))
    # The same low score: a person (present in 10% of images, always scored low) is far likelier than a dog.
    assert calibration.leaf_rate("person", LOW) > 10 * calibration.leaf_rate("dog", LOW)
    index = calibration.leaf.index(next(b for b in calibration.leaf if b.low <= LOW < b.high))
    prior = calibration.class_prior["dog"]
    odds = prior / (1 - prior) * calibration.likelihood_ratio[index]
    assert calibration.leaf_rate("dog", LOW) == pytest.approx(odds / (1 + odds))
    assert calibration.classes_per_image == pytest.approx(1.1)


def test_no_calibration_data_no_skip():
    rule = BudgetRule({"dog": LOW, "cat": LOW, "car": HIGH, "bus": LOW, "person": LOW}, risk_fit(DAG, []))
    state, node, skips, spent = advance_budget(start(DAG), ScoreOrder({}), rule)
    assert skips == [] and spent == 0.0 and node is not None


def test_skips_spend_the_image_budget_least_risky_first_and_record_their_bounds():
    calibration = risk_fit(DAG, images(3000))
    scores = {"dog": LOW, "cat": LOW, "car": HIGH, "bus": LOW, "person": LOW}
    rule = BudgetRule(scores, calibration, miss_rate=0.005)
    assert rule.budget == pytest.approx(0.005)  # one class per image
    state, node, skips, spent = advance_budget(start(DAG), ScoreOrder(node_scores(DAG, scores)), rule)
    # Roots only are candidates: q:animal and person (3000 images, never present) fit; q:vehicle is always
    # present and its feature is above the cap.
    assert sorted(s.node for s in skips) == ["person", "q:animal"]
    for s in skips:
        assert s.rule == RULE and s.target == rule.budget and s.positives == 0 and s.observations >= 3000
        assert s.bound == pytest.approx(clopper_pearson_upper(0, s.observations))
    bound = max(s.bound for s in skips)
    assert spent == pytest.approx(sum(s.bound for s in skips)) and spent <= rule.budget
    assert state.decisions["q:animal"].source is Source.SKIPPED
    assert state.decisions["cat"].source is Source.NO_FROM_SKIPPED
    assert node == "q:vehicle"
    # A tighter budget affords one skip only, and an image that spent its budget affords none.
    one = BudgetRule(scores, calibration, miss_rate=1.5 * bound)
    assert len(advance_budget(start(DAG), ScoreOrder({}), one)[2]) == 1
    assert advance_budget(start(DAG), ScoreOrder({}), rule, spent=rule.budget)[2] == []


def test_a_child_is_judged_by_its_share_of_its_present_parent():
    calibration = risk_fit(DAG, images(3000))
    scores = {"dog": LOW, "cat": LOW, "car": HIGH, "bus": LOW, "person": LOW}
    rule = BudgetRule(scores, calibration, miss_rate=0.005)
    state = answer(start(DAG), "car", True)  # decides q:vehicle present: bus is now a candidate under it
    risk, bucket = rule.risk(state, "bus")
    assert bucket is not None and bucket.positives == 0 and risk == pytest.approx(bucket.bound)
    # A node with no present parent is no candidate: no risk can be given.
    assert rule.risk(start(DAG), "bus")[0] == float("inf")
