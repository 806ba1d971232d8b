"""Qualification that a coin-flipper cannot pass by luck (issue 13, cause 6): a fixed, balanced set answered
once per kind, scored when complete; a failed attempt waits out a cool-down and retries on fresh items, a
limited number of times; and the ongoing rule blocks a worker near 0.6 accuracy over ~25 gold answers."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import queue
from consensus.models import Question
from gold import scoring, sprt
from gold.models import Block, GoldAnswer, GoldServing, GoldSettings, Purpose, WorkerScore
from tests.conftest import client_for

from .conftest import gold_for, make_images, make_workers, production_questions, small_qualification


def test_a_coin_flipper_passes_the_default_qualification_set_under_one_percent():
    defaults = GoldSettings()
    n, k = defaults.qualification_size, defaults.qualification_pass
    by_hand = sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n
    assert by_hand < 0.01
    assert scoring.qualification_chance(n, k) == pytest.approx(by_hand)
    # The old rule, 4 of the last 5 with unlimited retries, passed a coin-flipper's attempt 19% of the time.
    assert scoring.qualification_chance(5, 4) == pytest.approx(6 / 32)
    assert scoring.qualification_pass_needed(10) == 10 and scoring.qualification_pass_needed(5) is None


def test_the_ongoing_rule_blocks_sixteen_right_of_twenty_seven_and_spares_a_good_worker():
    assert scoring.score(16, 27).blocked, "the issue's random worker: 27 gold answers, 16 right"
    assert not scoring.score(25, 27).blocked
    assert not scoring.score(23, 27).blocked


def answer_qualification(worker, answers, right: list[bool], now=None):
    """Lease and answer qualification items, right or wrong as listed; returns the tasks' items."""
    served = []
    for i, ok in enumerate(right):
        a = queue.task_lease_next(worker=worker, kinds_wanted=["question"], now=now)
        assert a is not None, f"no task for item {i}"
        truth = answers[a.task.image_id]
        queue.assignment_submit(
            assignment=a, answer={"answer": truth if ok else not truth}, idempotency_key=f"{a.pk}"
        )
        serving = GoldServing.objects.get(assignment=a)
        assert serving.purpose == Purpose.QUALIFICATION
        served.append(serving)
    return served


@pytest.mark.django_db
def test_one_wrong_answer_fails_the_fixed_set_where_a_sliding_window_would_have_passed(dataset, concept):
    images = make_images(dataset, 40)
    production_questions(dataset, concept, images[:10])
    answers = {g.image_id: g.answer for g in gold_for(dataset, concept, images[10:])}
    small_qualification(dataset, qualification_size=8, qualification_pass=8)
    (w,) = make_workers(1)
    answer_qualification(w, answers, [False] + [True] * 7)
    row = WorkerScore.objects.get(worker=w, kind="image_verify")
    assert not row.qualified and row.qualification_failed == 1
    # Resting: no ninth item to slide the window on, and no production task either.
    assert queue.task_lease_next(worker=w, kinds_wanted=["question"]) is None


@pytest.mark.django_db
def test_a_failed_attempt_is_retried_after_the_cooldown_on_fresh_items_and_only_so_often(dataset, concept):
    images = make_images(dataset, 40)
    production_questions(dataset, concept, images[:10])
    answers = {g.image_id: g.answer for g in gold_for(dataset, concept, images[10:])}
    small_qualification(
        dataset,
        qualification_size=7,
        qualification_pass=7,
        qualification_attempts=2,
        qualification_cooldown=60,
    )
    (w,) = make_workers(1)
    first = answer_qualification(w, answers, [True] * 6 + [False])
    later = timezone.now() + timedelta(seconds=61)
    second = answer_qualification(w, answers, [True] * 6 + [False], now=later)
    assert {s.attempt for s in first} == {1} and {s.attempt for s in second} == {2}
    assert not {s.item_id for s in first} & {s.item_id for s in second}, "a retry is served fresh items"
    row = WorkerScore.objects.get(worker=w, kind="image_verify")
    assert (row.qualified, row.qualification_failed) == (False, 2)
    much_later = timezone.now() + timedelta(days=1)
    assert queue.task_lease_next(worker=w, kinds_wanted=["question"], now=much_later) is None, (
        "out of attempts"
    )


@pytest.mark.django_db
def test_the_qualification_set_is_balanced_so_always_yes_scores_half(dataset, concept):
    images = make_images(dataset, 40)
    production_questions(dataset, concept, images[:10])
    gold_for(dataset, concept, images[10:])
    # Blocking out of the way (the posterior rule, from 50 answers): an always-yes worker is otherwise blocked
    # before finishing the set.
    small_qualification(
        dataset, qualification_size=8, qualification_pass=8, block_min_answers=50, block_rule="posterior"
    )
    (w,) = make_workers(1)
    for i in range(8):
        a = queue.task_lease_next(worker=w, kinds_wanted=["question"])
        queue.assignment_submit(assignment=a, answer={"answer": True}, idempotency_key=f"y{i}")
    assert GoldAnswer.objects.filter(worker=w, correct=True).count() == 4
    assert not Question.objects.filter(task__assignments__worker=w).exists()


@pytest.mark.django_db
def test_the_sequential_test_blocks_an_always_yes_worker_within_the_qualification_set(dataset, concept):
    images = make_images(dataset, 40)
    production_questions(dataset, concept, images[:10])
    gold_for(dataset, concept, images[10:])
    # The default set (12 of 14, seven of them "no") and the default rule: the sequential test.
    small_qualification(dataset, qualification_size=14, qualification_pass=12)
    (w,) = make_workers(1)
    for i in range(14):
        a = queue.task_lease_next(worker=w, kinds_wanted=["question"])
        if a is None:
            break
        queue.assignment_submit(assignment=a, answer={"answer": True}, idempotency_key=f"y{i}")
    block = Block.objects.get(worker=w, dataset=dataset)
    # "yes" to four negatives is enough: the prior's mass of 0.25 on always-yes keeps the mixture above 0.25, so
    # log Lambda >= log(0.25) - 4 log(0.15) = 6.20 >= log(0.95 / 0.002) = 6.16; three are not (at most 4.44).
    assert block.kind == "sequential" and block.llr >= sprt.SprtRule().log_threshold
    wrong = GoldAnswer.objects.filter(worker=w, correct=False).count()
    assert wrong == 4 and GoldAnswer.objects.filter(worker=w).count() <= 11


@pytest.mark.django_db
def test_gold_settings_refuse_a_qualification_a_coin_flipper_passes_too_often(organizer, dataset):
    client = client_for(organizer)
    url = f"/api/v1/datasets/{dataset.pk}/gold-settings/"
    r = client.patch(url, {"qualification_size": 5, "qualification_pass": 4}, format="json")
    assert r.status_code == 400
    assert (
        "18.8%" in r.json()["qualification_pass"][0]
        and "use at least 7 items" in r.json()["qualification_pass"][0]
    )
    r = client.patch(url, {"qualification_size": 10, "qualification_pass": 9}, format="json")
    assert r.status_code == 400 and "at least 10 of 10" in r.json()["qualification_pass"][0]
    r = client.patch(url, {"qualification_size": 11, "qualification_pass": 10}, format="json")
    assert r.status_code == 200, r.content
