"""The cost ledger endpoint: usage from the queue's rows, priced at the dataset's settings; organizers only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import queue
from annotation.models import Assignment, AssignmentState
from crowd.models import Worker
from review.models import ItemState, ReviewItem, ReviewKind
from tests import factories

pytestmark = pytest.mark.django_db


def answered(task, worker, seconds):
    """A submitted answer that took `seconds`, through the queue's history import (which counts it)."""
    now = timezone.now()
    queue.assignments_import(
        [
            Assignment(
                task=task,
                worker=worker,
                leased_at=now - timedelta(seconds=seconds),
                expires_at=now,
                submitted_at=now,
                state=AssignmentState.SUBMITTED,
            )
        ]
    )


def test_the_ledger_counts_tasks_answers_and_seconds_per_stage_and_synset(
    api_client, organizer, dataset, worker, other_worker, django_assert_max_num_queries
):
    dog = factories.ConceptFactory(wnid="n02084071")
    cat = factories.ConceptFactory(wnid="n02121808")
    images = factories.ImageFactory.create_batch(2, dataset=dataset)
    dog_tasks = [factories.TaskFactory(image=i, concept=dog) for i in images]
    cat_task = factories.TaskFactory(image=images[0], concept=cat)
    w1, w2 = Worker.objects.get(user=worker), Worker.objects.get(user=other_worker)
    answered(dog_tasks[0], w1, 4)
    answered(dog_tasks[0], w2, 6)
    answered(dog_tasks[1], w1, 5)
    answered(cat_task, w2, 3)
    factories.TaskFactory(concept=dog)  # another dataset's task: not counted
    client = api_client(organizer)
    patch = client.patch(
        f"/api/v1/datasets/{dataset.pk}/cost-settings",
        {"rewards": {"binary_vote": 0.02}, "fee_fraction": 0.5},
        format="json",
    )
    assert patch.status_code == 200, patch.data
    with django_assert_max_num_queries(
        12
    ):  # a fixed number: 8 for usage, 3 for the providers' spend, 1 review
        ledger = client.get(f"/api/v1/datasets/{dataset.pk}/cost").data
    rows = {(r["stage"], r["wnid"]): r for r in ledger["rows"]}
    assert set(rows) == {("binary_vote", "n02084071"), ("binary_vote", "n02121808")}
    dog_row = rows[("binary_vote", "n02084071")]
    assert (dog_row["tasks"], dog_row["answers"], dog_row["worker_seconds"]) == (2, 3, 15.0)
    assert dog_row["cost"] == pytest.approx(3 * 0.02 * 1.5)
    assert ledger["totals"]["answers"] == 4 and ledger["totals"]["cost"] == pytest.approx(4 * 0.03)


def test_the_ledger_gives_reviewer_minutes_of_decided_and_open_review_items(
    api_client, organizer, dataset, other_dataset, settings
):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "REVIEW_SECONDS_PER_ITEM": 40}
    states = [ItemState.DECIDED] * 3 + [ItemState.OPEN, ItemState.DISMISSED]
    for n, state in enumerate(states):
        ReviewItem.objects.create(
            kind=ReviewKind.AMBIGUOUS, dataset=dataset, state=state, subject_key=f"consensus.question:{n}"
        )
    ReviewItem.objects.create(kind=ReviewKind.AMBIGUOUS, dataset=other_dataset, state=ItemState.DECIDED)
    reviewers = api_client(organizer).get(f"/api/v1/datasets/{dataset.pk}/cost").data["reviewers"]
    assert reviewers == {
        "decided_items": 3,
        "open_items": 1,
        "seconds_per_item": 40,
        "minutes_spent": 2.0,
        "minutes_expected": pytest.approx(0.7),
        "minutes_total": pytest.approx(2.7),
    }


def test_bad_prices_are_refused_naming_the_field(api_client, organizer, dataset):
    response = api_client(organizer).patch(
        f"/api/v1/datasets/{dataset.pk}/cost-settings", {"fee_fraction": -1}, format="json"
    )
    assert response.status_code == 400 and "fee_fraction" in response.data


def test_the_ledger_shows_what_mturk_paid_beside_the_published_estimate(api_client, organizer, dataset):
    """Spend comes from the settled assignment rows (reward, bonus and fees recorded at approval), never from
    the configured prices; rejected and unsettled assignments pay nothing."""
    from decimal import Decimal

    from crowd.models import HitState, MturkAssignment, MturkBudget, MturkHit, MturkHitType

    client = api_client(organizer)
    assert client.get(f"/api/v1/datasets/{dataset.pk}/cost").data["spend"] == []  # no provider moved money
    hit_type = MturkHitType.objects.create(
        dataset=dataset, kind="binary_vote", title="t", description="d", reward=Decimal("0.50")
    )
    MturkBudget.objects.create(dataset=dataset, cap=Decimal("20.00"))
    hit = MturkHit.objects.create(
        hit_type=hit_type,
        batch="b",
        request_token="t1",
        hit_id="HIT1",
        max_assignments=3,
        estimated_cost=Decimal("1.80"),
        state=HitState.PUBLISHED,
    )
    for n, (status, reward, bonus, fees) in enumerate(
        [
            ("approved", "0.50", "0.10", "0.12"),
            ("approved", "0.50", "0.00", "0.10"),
            ("rejected", "0.00", "0.00", "0.00"),
            ("submitted", "0.00", "0.00", "0.00"),
        ]
    ):
        MturkAssignment.objects.create(
            assignment_id=f"A{n}",
            hit=hit,
            mturk_worker_id=f"W{n}",
            status=status,
            reward_paid=Decimal(reward),
            bonus_paid=Decimal(bonus),
            fees_paid=Decimal(fees),
        )
    (spend,) = client.get(f"/api/v1/datasets/{dataset.pk}/cost").data["spend"]
    assert spend == {
        "provider": "mturk",
        "assignments_approved": 2,
        "assignments_rejected": 1,
        "rewards": "1.00",
        "bonuses": "0.10",
        "fees": "0.22",
        "total": "1.32",
        "estimated": "1.80",
        "budget": "20.00",
    }
