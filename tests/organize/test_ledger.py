"""organize.ledger: money per stage and synset at reward plus fee, the two comparison designs and the
reviewers' minutes (pure)."""

import pytest

from organize.ledger import Pricing, UsageRow, ledger_compute, reviewer_minutes

PRICING = Pricing(rewards={"box_draw": 0.05}, default_reward=0.01, fee_fraction=0.2)


def test_money_is_answers_times_reward_plus_fee_per_row_and_in_total():
    rows = [
        UsageRow("image_verify", "n1", tasks=10, answers=25, worker_seconds=100.0, decided_questions=10),
        UsageRow("box_draw", "", tasks=4, answers=4, worker_seconds=200.0),
    ]
    ledger = ledger_compute(rows, PRICING)
    assert [r["cost"] for r in ledger["rows"]] == [pytest.approx(0.3), pytest.approx(0.24)]
    assert ledger["totals"] == {
        "tasks": 14,
        "answers": 29,
        "worker_seconds": 300.0,
        "cost": pytest.approx(0.54),
    }


def test_majority_5_prices_every_decided_question_at_five_answers_and_other_work_as_it_was():
    rows = [
        UsageRow("image_verify", "n1", tasks=10, answers=25, worker_seconds=0, decided_questions=10),
        UsageRow("box_draw", "", tasks=4, answers=4, worker_seconds=0),
    ]
    assert ledger_compute(rows, PRICING)["alternatives"]["fixed_majority_5"] == pytest.approx(
        50 * 0.012 + 0.24
    )


def test_flat_per_class_asks_every_class_at_the_observed_answers_per_question():
    rows = [UsageRow("hierarchy", "q:animal", tasks=40, answers=120, worker_seconds=0, decided_questions=40)]
    alt = ledger_compute(rows, PRICING, multilabel_images_x_classes=10 * 20)["alternatives"]
    assert alt["flat_votes_per_question"] == 3.0
    assert alt["multilabel_flat_per_class"] == pytest.approx(200 * 3 * 0.012)
    assert alt["multilabel_hierarchical"] == pytest.approx(120 * 0.012)


def test_reviewer_minutes_are_decided_items_spent_and_open_ones_expected_at_the_set_seconds():
    assert reviewer_minutes(decided=5, open_items=3, seconds_per_item=30) == {
        "decided_items": 5,
        "open_items": 3,
        "seconds_per_item": 30,
        "minutes_spent": 2.5,
        "minutes_expected": 1.5,
        "minutes_total": 4.0,
    }
    assert reviewer_minutes(decided=0, open_items=0, seconds_per_item=30)["minutes_total"] == 0.0
