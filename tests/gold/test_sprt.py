"""The sequential test of gold.sprt without a database: its error rates by exact computation (every path of
answers summed, the test checked after each one), always-yes workers caught on the negatives, leave-one-out
references, and colluding partners left out of each other's references."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gold import sprt
from gold.sprt import Evidence, SprtRule


def test_an_uninformative_worker_against_a_good_one_by_hand():
    rule = SprtRule(coin_weight=0.0, yes_weight=0.0)  # the uniform prior alone
    # 5 of 10 gold answers right, 6 of them "yes": the mixture integral B(7, 5) over the fit at p_gold (0.85).
    e = Evidence(tp=3, fn=2, tn=2, fp=3)
    mixture = math.factorial(6) * math.factorial(4) / math.factorial(11)
    good = (0.85**3 * 0.15**2) * (0.85**2 * 0.15**3)
    assert sprt.log_likelihood_ratio(e, Evidence(), rule) == pytest.approx(math.log(mixture / good))
    # A good worker's counts are fit at their own share when it is above p_gold: no evidence against them.
    assert sprt.log_likelihood_ratio(Evidence(tp=10), Evidence(), rule) == pytest.approx(-math.log(11))
    assert rule.log_threshold == pytest.approx(math.log(0.95 / 0.002))


def test_the_prior_puts_mass_on_a_coin_and_on_always_yes_by_hand():
    rule = SprtRule()  # 0.5 on r = 1/2, 0.25 on r = 1, 0.25 uniform
    e = Evidence(tp=3, fn=2, tn=2, fp=3)  # 6 yes of 10
    uniform = math.factorial(6) * math.factorial(4) / math.factorial(11)
    assert sprt.log_mixture(6, 10, rule) == pytest.approx(math.log(0.25 * uniform + 0.5 * 0.5**10))
    good = (0.85**3 * 0.15**2) * (0.85**2 * 0.15**3)
    assert sprt.log_likelihood_ratio(e, Evidence(), rule) == pytest.approx(
        math.log(0.25 * uniform + 0.5 * 0.5**10) - math.log(good)
    )
    # All yes: the point at r = 1 counts in full.
    assert sprt.log_mixture(10, 10, rule) == pytest.approx(math.log(0.25 / 11 + 0.5 * 0.5**10 + 0.25))
    with pytest.raises(ValueError):
        SprtRule(coin_weight=0.8, yes_weight=0.2)


def test_the_points_block_always_yes_sooner_than_the_uniform_prior_exactly():
    uniform = SprtRule(coin_weight=0.0, yes_weight=0.0)
    points = SprtRule()
    assert (
        sprt.block_probability(1.0, 0.0, 0.5, answers=10, rule=points)[-1]
        > sprt.block_probability(1.0, 0.0, 0.5, answers=10, rule=uniform)[-1] + 0.1
    )


def test_the_floor_under_any_rule_for_coin_flippers_against_honest_workers():
    # KL(coin || 0.7) = 0.0872 nats an answer; d(0.5 || 0.01) = 1.61: no rule blocks half the coin-flippers
    # within 18 answers while blocking at most 1% of workers right 70% of the time.
    kl = 0.5 * math.log(0.5 / 0.7) + 0.5 * math.log(0.5 / 0.3)
    d = 0.5 * math.log(0.5 / 0.01) + 0.5 * math.log(0.5 / 0.99)
    assert sprt.fewest_answers(0.7, 0.01, 0.5) == pytest.approx(d / kl)
    assert 18 < sprt.fewest_answers(0.7, 0.01, 0.5) < 19
    assert 47 < sprt.fewest_answers(0.7, 0.01, 0.95) < 49
    assert sprt.fewest_answers(0.8, 0.01, 0.5) < sprt.fewest_answers(0.7, 0.01, 0.5)
    with pytest.raises(ValueError):
        sprt.fewest_answers(0.7, 0.5, 0.1)


def test_agreement_is_held_to_its_own_bar():
    same = Evidence(tp=6, fn=2, tn=6, fp=2)
    as_gold = sprt.log_likelihood_ratio(same, Evidence())
    as_agreement = sprt.log_likelihood_ratio(Evidence(), same)
    assert as_agreement < as_gold, "75% right is nearer the agreement bar (0.8) than the gold bar (0.85)"


@pytest.mark.parametrize("accuracy", [0.85, 0.9, 0.97])
def test_a_good_worker_is_blocked_at_most_alpha_over_beta_complement_exactly(accuracy):
    rule = SprtRule()
    bound = rule.alpha / (1 - rule.beta)
    for positive_rate in (0.5, 0.8):
        blocked = sprt.block_probability(accuracy, accuracy, positive_rate, answers=40, rule=rule)
        assert blocked[-1] <= bound, (accuracy, positive_rate, blocked[-1])
    # Agreement at the agreement bar is held to the same error rate.
    assert sprt.block_probability(0.8, 0.8, 0.5, answers=40, rule=rule, agreement=True)[-1] <= bound


def test_the_error_rate_holds_for_a_long_career_seeded():
    """Ville's bound is for ever, not for 40 answers: 2,000 workers right 85% of the time on gold answer 300
    items each; at most alpha / (1 - beta) of them may be blocked (a loose bound: 3x the expected count)."""
    rule = SprtRule()
    rng = np.random.default_rng(7)
    blocked = 0
    for _ in range(2000):
        truth = rng.random(300) < 0.5
        right = rng.random(300) < 0.85
        tp = np.cumsum(truth & right)
        fn = np.cumsum(truth & ~right)
        tn = np.cumsum(~truth & right)
        fp = np.cumsum(~truth & ~right)
        if any(
            sprt.verdict(Evidence(int(a), int(b), int(c), int(d)), Evidence(), rule).blocked
            for a, b, c, d in zip(tp, fn, tn, fp, strict=True)
        ):
            blocked += 1
    assert blocked <= 3 * 2000 * rule.alpha / (1 - rule.beta)


def test_random_and_always_yes_workers_are_blocked_and_always_yes_faster():
    rule = SprtRule()
    coin = sprt.block_probability(0.5, 0.5, 0.5, answers=30, rule=rule)
    always_yes = sprt.block_probability(1.0, 0.0, 0.5, answers=30, rule=rule)
    assert coin[29] >= 0.75 and always_yes[15] >= 0.95 and always_yes[29] > 0.999
    # With 80% positives an always-yes worker is right 80% of the time, yet caught on the negatives.
    skewed = sprt.block_probability(1.0, 0.0, 0.8, answers=40, rule=rule)
    assert skewed[39] >= 0.8


def test_pooling_without_classes_would_miss_an_always_yes_worker_on_skewed_data():
    """The same counts pooled (right / wrong only) say 80% right: a class-blind test sees a good worker."""
    yes_worker = Evidence(tp=32, fn=0, tn=0, fp=8)
    assert sprt.verdict(yes_worker).blocked
    pooled_right = yes_worker.right / yes_worker.answers
    assert pooled_right == 0.8


def test_the_reference_leaves_the_worker_out_and_needs_a_lead():
    votes = {1: True, 2: True, 3: True, 4: False}
    assert sprt.reference_of(4, votes, frozenset()) is True  # 3-0 without worker 4
    assert sprt.reference_of(1, votes, frozenset()) is None  # 2-1 without worker 1: lead 1 < 2
    e = sprt.agreement_evidence(4, [votes, {1: False, 2: False, 4: False}])
    assert e == Evidence(fn=1, tn=1)  # said no to a yes, and no to a no


def test_a_colluding_pair_does_not_vouch_for_itself():
    rng = np.random.default_rng(3)
    questions, decided = [], []
    for i in range(60):
        truth = bool(i % 2)
        pair = bool(rng.random() < 0.5)  # the pair's shared coin
        votes = {100: pair, 101: pair}
        # Two honest voters right 90% of the time.
        votes |= {h: truth if rng.random() < 0.9 else not truth for h in (1, 2)}
        questions.append(votes)
        decided.append(votes)
    partners = sprt.partners(100, questions)
    assert partners == frozenset({101})
    trusting = sprt.agreement_evidence(100, decided, frozenset())
    careful = sprt.agreement_evidence(100, decided, partners)
    # With the partner counted, the pair's agreement with itself makes most of its "right" evidence; without
    # it, the pair is measured against the honest voters only, and the test blocks it.
    assert trusting.right / trusting.answers > 0.9
    assert careful.right / careful.answers < 0.7
    assert not sprt.verdict(Evidence(), trusting).blocked
    assert sprt.worker_verdict(100, [], decided, questions).blocked


def test_an_honest_pair_agreeing_as_honest_workers_do_is_not_a_partner():
    rng = np.random.default_rng(5)
    questions = []
    for i in range(200):
        truth = bool(i % 2)
        questions.append({w: truth if rng.random() < 0.88 else not truth for w in (1, 2)})
    assert sprt.partners(1, questions) == frozenset()


def test_rules_refuse_meaningless_settings():
    with pytest.raises(ValueError):
        SprtRule(p_gold=0.5)
    with pytest.raises(ValueError):
        SprtRule(alpha=0.6, beta=0.5)
