"""Dawid-Skene reliability: recovering worker rates, gold anchors, and weighting votes by proven reliability."""

import numpy as np
import pytest

from consensus.reliability import (
    WorkerReliability,
    decide_stream,
    decide_weighted,
    fit_dawid_skene,
    fit_item_difficulty,
    posterior_positive,
    running_posteriors,
)
from consensus.stopping import ACCEPT, Decision, thresholds_for_precision


def synthetic_votes(n_items=4000, n_workers=60, votes_per_item=8, seed=0, sens=None, spec=None):
    rng = np.random.default_rng(seed)
    truth = rng.random(n_items) < 0.6
    sens = rng.uniform(0.6, 0.98, n_workers) if sens is None else sens
    spec = rng.uniform(0.6, 0.98, n_workers) if spec is None else spec
    items = np.repeat(np.arange(n_items), votes_per_item)
    workers = np.argsort(rng.random((n_items, n_workers)), axis=1)[:, :votes_per_item].ravel()
    p_yes = np.where(truth[items], sens[workers], 1 - spec[workers])
    answers = rng.random(items.size) < p_yes
    return truth, sens, spec, items, workers, answers


def test_em_recovers_each_workers_sensitivity_and_specificity_within_a_few_points():
    # ~1,000 votes per worker (about 400 on negatives): sampling error alone is ~2 points per rate.
    truth, sens, spec, items, workers, answers = synthetic_votes(n_items=8000)
    fit = fit_dawid_skene(items, workers, answers)
    rel = fit.reliability
    assert fit.converged
    assert np.mean(np.abs(rel.sensitivity - sens)) < 0.025 and np.max(np.abs(rel.sensitivity - sens)) < 0.08
    assert np.mean(np.abs(rel.specificity - spec)) < 0.025 and np.max(np.abs(rel.specificity - spec)) < 0.08
    assert abs(rel.prior - truth.mean()) < 0.02
    majority = np.bincount(items, weights=answers) / np.bincount(items) > 0.5
    assert np.mean((fit.posterior > 0.5) == truth) > np.mean(majority == truth) + 0.01


def test_one_coin_model_recovers_accuracy():
    acc = np.random.default_rng(5).uniform(0.55, 0.95, 60)
    _, _, _, items, workers, answers = synthetic_votes(sens=acc, spec=acc, seed=5)
    rel = fit_dawid_skene(items, workers, answers, model="one-coin").reliability
    assert np.mean(np.abs(rel.sensitivity - acc)) < 0.02
    np.testing.assert_array_equal(rel.sensitivity, rel.specificity)


def test_gold_answers_are_kept_and_rescue_a_crowd_whose_majority_is_wrong():
    # 70% of workers answer the opposite of the truth: majority voting (and an unanchored EM started from it)
    # gets the labels backwards; gold answers on 10% of the items pin the classes down.
    rng = np.random.default_rng(2)
    n_workers = 50
    adversarial = rng.random(n_workers) < 0.7
    rate = np.where(adversarial, 0.15, 0.9)
    truth, _, _, items, workers, answers = synthetic_votes(n_workers=n_workers, sens=rate, spec=rate, seed=2)
    gold = np.arange(0, truth.size, 10)
    free = fit_dawid_skene(items, workers, answers)
    anchored = fit_dawid_skene(items, workers, answers, gold_items=gold, gold_labels=truth[gold])
    assert np.mean((free.posterior > 0.5) == truth) < 0.5
    assert np.mean((anchored.posterior > 0.5) == truth) > 0.95
    np.testing.assert_array_equal(anchored.posterior[gold], truth[gold].astype(float))
    assert np.all(anchored.reliability.sensitivity[adversarial] < 0.5)


def test_a_proven_workers_vote_moves_the_posterior_more_than_a_newcomers():
    rel = WorkerReliability(
        worker_ids=np.array([1, 2]),
        sensitivity=np.array([0.98, 0.6]),
        specificity=np.array([0.98, 0.6]),
        n_votes=np.array([500, 500]),
        prior=0.5,
        default_sensitivity=0.8,
        default_specificity=0.8,
    )
    proven, weak, newcomer = (posterior_positive(rel, [w], [True]) for w in (1, 2, 99))
    assert proven == pytest.approx(0.98) and newcomer == pytest.approx(0.8) and weak == pytest.approx(0.6)
    # Two agreeing proven votes reach a 99.7% accept; two agreeing newcomer votes do not.
    policy = thresholds_for_precision(0.997)
    assert decide_weighted(rel, [1, 1], [True, True], policy) is Decision.ACCEPT
    assert decide_weighted(rel, [98, 99], [True, True], policy) is Decision.ASK_MORE


def test_running_posteriors_match_the_posterior_of_each_prefix():
    rng = np.random.default_rng(4)
    _, _, _, items, workers, answers = synthetic_votes(n_items=300, seed=4)
    rel = fit_dawid_skene(items, workers, answers).reliability
    order = rng.permutation(items.size)  # arrival order interleaves items
    items, workers, answers = items[order], workers[order], answers[order]
    p, counts = running_posteriors(rel, items, workers, answers)
    for pos in rng.choice(items.size, size=50, replace=False):
        mine = np.flatnonzero(items[: pos + 1] == items[pos])
        assert counts[pos] == mine.size
        assert p[pos] == pytest.approx(posterior_positive(rel, workers[mine], answers[mine]), abs=1e-12)
    codes = decide_stream(rel, items, workers, answers, thresholds_for_precision())
    assert codes.shape == items.shape and np.any(codes == ACCEPT)


def test_fit_refuses_misaligned_inputs():
    with pytest.raises(ValueError):
        fit_dawid_skene([1, 2], [1], [True, False])


def hard_item_votes(hard_share, n_items=3000, n_workers=40, votes_per_item=8, seed=7):
    """Good workers (accuracy 0.9) whose errors are independent on ordinary items; on a `hard_share` of the
    items (a confusable class beside the asked one) every worker is right only 60% of the time."""
    rng = np.random.default_rng(seed)
    truth = rng.random(n_items) < 0.4
    hard = rng.random(n_items) < hard_share
    items = np.repeat(np.arange(n_items), votes_per_item)
    workers = np.argsort(rng.random((n_items, n_workers)), axis=1)[:, :votes_per_item].ravel()
    right = rng.random(items.size) < np.where(hard[items], 0.6, 0.9)
    answers = np.where(right, truth[items], ~truth[items])
    return truth, hard, items, workers, answers


def test_hard_items_are_found_and_a_split_among_good_workers_is_no_longer_near_certain():
    truth, hard, items, workers, answers = hard_item_votes(hard_share=0.1)
    plain = fit_dawid_skene(items, workers, answers)
    rel = fit_item_difficulty(plain, items, workers, answers).reliability
    assert 0.02 < rel.hard_share < 0.2 and rel.hard_strength < 0.5
    good = [int(w) for w in rel.worker_ids[:10]]
    split = [True] * 8 + [False] * 4  # 8 yes, 4 no: on hard items this is what a negative looks like
    assert posterior_positive(plain.reliability, good + good[:2], split) > 0.99
    assert posterior_positive(rel, good + good[:2], split) < 0.95
    # Agreement still settles a question, with a vote or two more than the plain model asks.
    assert posterior_positive(rel, good[:6], [True] * 6) > 0.997
    assert posterior_positive(rel, good[:3], [False] * 3) < 0.02


def test_sequential_decisions_keep_their_promise_only_with_hard_items_in_the_model():
    # Votes arrive one at a time until P >= 0.997 or P <= 0.02 (the platform's stopping rule). With hard items
    # the plain model stops on lucky runs of agreement and errs several times more often than it promises.
    truth, hard, items, workers, answers = hard_item_votes(hard_share=0.1, votes_per_item=12, seed=11)
    plain = fit_dawid_skene(items, workers, answers)
    mixed = fit_item_difficulty(plain, items, workers, answers)

    def errors(reliability):
        wrong = 0
        for i in range(800):
            mine = items == i
            for n in range(1, 13):
                p = posterior_positive(reliability, workers[mine][:n], answers[mine][:n])
                if p >= 0.997 or p <= 0.02:
                    wrong += (p >= 0.5) != truth[i]
                    break
        return wrong

    assert errors(plain.reliability) >= 3 * max(errors(mixed.reliability), 1)


def test_without_hard_items_the_plain_model_is_kept():
    _, _, items, workers, answers = hard_item_votes(hard_share=0.0)
    plain = fit_dawid_skene(items, workers, answers)
    assert fit_item_difficulty(plain, items, workers, answers).reliability.hard_share == 0.0
