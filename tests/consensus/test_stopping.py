"""Sequential stopping: thresholds from a target precision, table-driven decisions, and the count policies
(fixed majority, first to k, lead by a margin) that decide every other yes/no of the platform."""

import numpy as np
import pytest

from consensus.calibration import ConfidenceTable
from consensus.stopping import (
    ACCEPT,
    ASK_MORE,
    REJECT,
    REVIEW,
    Decision,
    FirstToPolicy,
    MajorityPolicy,
    MarginPolicy,
    ThresholdPolicy,
    decide,
    decide_many,
    decision_matrix,
    first_decisions,
    outcome_of,
    thresholds_for_precision,
)


def model_table(prior: float, q1: float, q0: float, cap: int = 12) -> ConfidenceTable:
    """Exact P(positive | a, b) for votes i.i.d. given the class: what a perfectly calibrated table holds."""
    a, b = np.meshgrid(np.arange(cap + 1), np.arange(cap + 1), indexing="ij")
    logit = np.log(prior / (1 - prior)) + a * np.log(q1 / q0) + b * np.log((1 - q1) / (1 - q0))
    p = np.where(a + b <= cap, 1 / (1 + np.exp(-logit)), np.nan)
    return ConfidenceTable(cap=cap, probabilities=p, n_images=0, n_votes=0, prior=prior)


def test_accept_threshold_is_the_target_precision_and_reject_threshold_the_allowed_error():
    policy = thresholds_for_precision(0.997)
    assert policy.tau_accept == 0.997 and policy.tau_reject == 0.02 and policy.cap == 12
    assert thresholds_for_precision(0.99, reject_error=0.05).tau_reject == 0.05


def test_hierarchy_questions_reject_only_as_surely_as_they_accept():
    policy = thresholds_for_precision(0.997, favour_yes=True)
    assert policy.tau_reject == pytest.approx(0.003)
    assert policy.tau_reject < thresholds_for_precision(0.997).tau_reject


@pytest.mark.parametrize("bad", [0.4, 1.0])
def test_unreachable_target_precisions_are_refused(bad):
    with pytest.raises(ValueError):
        thresholds_for_precision(bad)


@pytest.mark.parametrize("target", [0.99, 0.997])
def test_thresholds_deliver_the_target_precision_on_a_calibrated_table(target):
    rng = np.random.default_rng(11)
    prior, q1, q0 = 0.6, 0.8, 0.25
    table = model_table(prior, q1, q0)
    policy = thresholds_for_precision(target)
    n = 200_000
    truth = rng.random(n) < prior
    answers = rng.random((n, 12)) < np.where(truth, q1, q0)[:, None]
    codes, _ = first_decisions(table, answers, policy)
    accepted = codes == ACCEPT
    assert truth[accepted].mean() >= target
    # ...and the reject side keeps its promise too: few positives among rejected items.
    assert truth[codes == REJECT].mean() <= policy.tau_reject


def test_decide_accepts_rejects_asks_more_and_reviews_at_the_cap():
    table = model_table(0.6, 0.85, 0.15)
    policy = thresholds_for_precision(0.997)
    assert decide(table, 0, 0, policy) is Decision.ASK_MORE
    assert decide(table, 4, 0, policy) is Decision.ACCEPT  # odds 1.5 * (0.85/0.15)^4 > 332
    assert decide(table, 3, 0, policy) is Decision.ASK_MORE  # P = 0.9962 < 0.997
    assert decide(table, 0, 3, policy) is Decision.REJECT
    assert decide(table, 6, 6, policy) is Decision.REVIEW
    assert decide(table, 5, 6, policy) is Decision.ASK_MORE


def test_more_yes_never_turns_an_accept_into_anything_else():
    table = model_table(0.6, 0.85, 0.15)
    matrix = decision_matrix(table, thresholds_for_precision())
    for b in range(13):
        col = matrix[: 13 - b, b]
        first = np.flatnonzero(col == ACCEPT)
        if first.size:
            assert np.all(col[first[0] :] == ACCEPT)


def test_threshold_policy_refuses_inverted_thresholds():
    with pytest.raises(ValueError):
        ThresholdPolicy(tau_accept=0.4, tau_reject=0.6)


@pytest.mark.parametrize(
    ("n", "a", "b", "expected"),
    [
        (3, 2, 0, Decision.ACCEPT),
        (3, 1, 1, Decision.ASK_MORE),
        (3, 0, 2, Decision.REJECT),
        (3, 1, 0, Decision.ASK_MORE),
        (5, 3, 1, Decision.ACCEPT),
        (5, 2, 2, Decision.ASK_MORE),
        (5, 1, 3, Decision.REJECT),
        (7, 3, 3, Decision.ASK_MORE),
        (7, 4, 0, Decision.ACCEPT),
        (4, 2, 2, Decision.REVIEW),
    ],
)
def test_majority_rules_stop_as_soon_as_the_majority_is_decided(n, a, b, expected):
    assert decide(None, a, b, MajorityPolicy(n)) is expected


def test_decide_many_agrees_with_decide_pattern_by_pattern():
    table = model_table(0.5, 0.8, 0.2)
    policy = thresholds_for_precision()
    a, b = np.meshgrid(np.arange(13), np.arange(13), indexing="ij")
    inside = a + b <= 12
    codes = decide_many(table, a[inside], b[inside], policy)
    for ai, bi, code in zip(a[inside], b[inside], codes, strict=True):
        assert Decision.from_code(code) is decide(table, int(ai), int(bi), policy)


def test_first_decisions_count_the_votes_spent_and_respect_paid_calibration_votes():
    answers = np.array([[True, True, False, True], [False, False, True, True], [True, False, True, False]])
    codes, spent = first_decisions(None, answers, MajorityPolicy(3))
    assert codes.tolist() == [ACCEPT, REJECT, ACCEPT]
    assert spent.tolist() == [2, 2, 3]
    # A row whose first 4 votes were already paid for is judged on all of them.
    codes, spent = first_decisions(None, answers, MajorityPolicy(3), start=np.array([1, 4, 1]))
    assert spent.tolist() == [2, 4, 3]


def test_decision_codes_round_trip_and_undecided_is_zero():
    assert ASK_MORE == 0
    for d in Decision:
        assert Decision.from_code(d.code) is d
    assert Decision.REVIEW.code == REVIEW and Decision.ACCEPT == "accept"


def test_a_capped_question_is_settled_only_while_the_accepted_set_keeps_its_expected_precision():
    from consensus.stopping import DecidedSoFar, settle_at_cap

    policy = thresholds_for_precision(0.997)
    # 200 labels accepted at P = 0.9999 leave slack for one at 0.98: mean precision 0.99980 >= 0.997.
    slack = DecidedSoFar(accepted=200, accepted_risk=200 * 1e-4, rejected=50, rejected_risk=50 * 1e-3)
    assert settle_at_cap(0.98, slack, policy) == Decision.ACCEPT
    assert settle_at_cap(0.03, slack, policy) == Decision.REJECT
    # The first capped question has no slack to spend; a near coin flip never settles.
    assert settle_at_cap(0.98, DecidedSoFar(), policy) == Decision.REVIEW
    assert settle_at_cap(0.80, slack, policy) == Decision.REVIEW
    assert settle_at_cap(float("nan"), slack, policy) == Decision.REVIEW
    # Slack already spent: the set would drop below the target.
    spent = DecidedSoFar(accepted=10, accepted_risk=0.029)
    assert settle_at_cap(0.98, spent, policy) == Decision.REVIEW


# The rules the count policies replaced, written out as they stood in the kinds that decided for themselves
# (the plain vote kind, the fixed box-question backend, multi-label's `vote` engine): every vote pattern up to
# the cap must close the task the same way, with the same answer.


def retired_majority(yes: int, no: int, wanted: int) -> tuple[bool, bool | None]:
    need = wanted // 2 + 1
    outcome = True if yes >= need else False if no >= need else None
    return outcome is not None or yes + no >= wanted, outcome


def retired_first_to(yes: int, no: int, yes_needed: int, no_needed: int) -> tuple[bool, bool | None]:
    outcome = True if yes >= yes_needed else False if no >= no_needed else None
    return outcome is not None or yes + no >= yes_needed + no_needed - 1, outcome


def retired_margin(yes, no, yes_margin, no_margin, max_votes, at_cap) -> tuple[bool, bool | None]:
    if yes - no >= yes_margin:
        return True, True
    if no - yes >= no_margin:
        return True, False
    if yes + no >= max_votes:
        return True, at_cap if yes == no else yes > no
    return False, None


def closes(decision: Decision) -> tuple[bool, bool | None]:
    return decision is not Decision.ASK_MORE, outcome_of(decision)


@pytest.mark.parametrize("wanted", [1, 2, 3, 4, 5, 7])
def test_the_majority_policy_closes_plain_votes_as_the_retired_rule_did(wanted):
    for yes in range(wanted + 1):
        for no in range(wanted + 1 - yes):
            assert closes(decide(None, yes, no, MajorityPolicy(wanted))) == retired_majority(yes, no, wanted)


@pytest.mark.parametrize("yes_needed, no_needed", [(2, 2), (3, 1), (1, 3), (4, 2)])
def test_the_first_to_policy_closes_box_questions_as_the_retired_rule_did(yes_needed, no_needed):
    policy = FirstToPolicy(yes_needed, no_needed)
    for yes in range(policy.cap + 1):
        for no in range(policy.cap + 1 - yes):
            assert closes(decide(None, yes, no, policy)) == retired_first_to(yes, no, yes_needed, no_needed)
    assert str(policy) == f"{yes_needed} yes or {no_needed} no"


@pytest.mark.parametrize("margins", [(2, 3, 7, True), (3, 3, 9, True), (1, 2, 4, False)])
def test_the_margin_policy_decides_hierarchy_votes_as_the_retired_rule_did(margins):
    policy = MarginPolicy(*margins)
    for yes in range(policy.cap + 1):
        for no in range(policy.cap + 1 - yes):
            assert closes(decide(None, yes, no, policy)) == retired_margin(yes, no, *margins)


def test_count_policies_never_send_a_question_to_review_except_a_majority_tie():
    for policy in (FirstToPolicy(2, 2), FirstToPolicy(3, 1), MarginPolicy(2, 3, 7), MajorityPolicy(3)):
        assert REVIEW not in decision_matrix(None, policy)
    assert decide(None, 2, 2, MajorityPolicy(4)) is Decision.REVIEW


def test_count_policies_refuse_rules_that_cannot_decide():
    with pytest.raises(ValueError):
        FirstToPolicy(0, 2)
    with pytest.raises(ValueError):
        MarginPolicy(yes_margin=4, no_margin=1, max_votes=3)
    with pytest.raises(ValueError):
        MarginPolicy(yes_margin=0, no_margin=1, max_votes=3)


def test_the_outcome_of_a_decision_is_its_answer():
    assert [outcome_of(d) for d in Decision] == [None, True, False, None]


def test_a_count_policy_round_trips_through_the_rule_a_question_stores():
    from consensus.stopping import policy_of, rule_of

    for policy in (MajorityPolicy(5), FirstToPolicy(3, 1), MarginPolicy(2, 3, 7, at_cap=False)):
        rule = rule_of(policy)
        assert policy_of(rule) == policy
        assert rule["policy"] in ("majority", "first_to", "margin") and rule["on_review"] == "review"
    assert rule_of(MajorityPolicy(4), on_review="close")["on_review"] == "close"
    assert str(MajorityPolicy(3)) == "majority of 3"


def test_a_bad_rule_is_refused_with_what_is_wrong():
    from consensus.stopping import policy_of, rule_of, thresholds_for_precision

    with pytest.raises(ValueError, match="unknown count policy 'median'"):
        policy_of({"policy": "median"})
    with pytest.raises(ValueError, match="bad majority rule"):
        policy_of({"policy": "majority", "votes": 3})
    with pytest.raises(ValueError, match="at least one vote"):
        policy_of({"policy": "majority", "n_votes": 0})
    with pytest.raises(ValueError, match="on_review"):
        policy_of({"policy": "majority", "n_votes": 3, "on_review": "ignore"})
    with pytest.raises(ValueError, match="not a count policy"):
        rule_of(thresholds_for_precision())
