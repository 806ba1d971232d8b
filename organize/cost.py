"""The dataset's usage from SQL aggregates (a fixed number of queries), priced by `organize.ledger`, the
money providers actually paid (crowd.providers.spend) and the reviewers' time its review items take."""

from __future__ import annotations

from dataclasses import asdict

from django.conf import settings as django_settings
from django.db.models import Count, Q

from annotation.models import Dataset, UsageCounter
from consensus.models import QuestionTally
from crowd.providers.spend import dataset_spend
from hierarchy.models import QuestionNode
from multilabel.models import ImageLabeling
from review.models import OPEN_STATES, ItemState, ReviewItem

from .ledger import Pricing, UsageRow, ledger_compute, reviewer_minutes
from .models import CostSettings


def dataset_usage(dataset: Dataset) -> list[UsageRow]:
    # Tasks, answers and worker-seconds from the dataset's usage counters (kept by the queue in the
    # transactions that create tasks and store answers), not from grouping every answer.
    usage = {
        (r["stage"], r["concept__wnid"] or ""): (r["tasks"], r["answers"], r["worker_microseconds"])
        for r in UsageCounter.objects.filter(dataset=dataset).values(
            "stage", "concept__wnid", "tasks", "answers", "worker_microseconds"
        )
        if r["tasks"] or r["answers"]
    }
    decided = {
        (r["kind"], r["concept__wnid"]): r["decided"]
        for r in QuestionTally.objects.filter(dataset=dataset, decided__gt=0).values(
            "kind", "concept__wnid", "decided"
        )
    }
    rows = []
    for key in sorted(usage):
        tasks, answers, microseconds = usage[key]
        rows.append(
            UsageRow(
                stage=key[0],
                wnid=key[1],
                tasks=tasks,
                answers=answers,
                worker_seconds=round(microseconds / 1e6, 1),
                decided_questions=decided.get(key, 0),
            )
        )
    return rows


def multilabel_images_x_classes(dataset: Dataset) -> int:
    """Σ over the dataset's multi-labelled images of their hierarchy's number of classes (the flat design's
    questions)."""
    per_hierarchy = dict(
        ImageLabeling.objects.filter(dataset=dataset).values_list("hierarchy").annotate(n=Count("id"))
    )
    if not per_hierarchy:
        return 0
    leaves = dict(
        QuestionNode.objects.filter(hierarchy__in=per_hierarchy, leaf=True)
        .values_list("hierarchy")
        .annotate(n=Count("id", filter=Q(leaf=True)))
    )
    return sum(n * leaves.get(h, 0) for h, n in per_hierarchy.items())


def dataset_reviewer_time(dataset: Dataset) -> dict:
    """Reviewer-minutes of every review item of the dataset (questions and box jobs in review, duplicate and
    cross-class pairs): decided items as time spent, open and leased ones as time still to come; dismissed
    items took none."""
    counts = ReviewItem.objects.filter(dataset=dataset).aggregate(
        decided=Count("id", filter=Q(state=ItemState.DECIDED)),
        open_items=Count("id", filter=Q(state__in=OPEN_STATES)),
    )
    return reviewer_minutes(**counts, seconds_per_item=django_settings.CROWDLABEL["REVIEW_SECONDS_PER_ITEM"])


def dataset_ledger(dataset: Dataset) -> dict:
    settings = CostSettings.for_dataset(dataset.pk)
    pricing = Pricing(
        rewards={k: float(v) for k, v in settings.rewards.items()},
        default_reward=float(settings.default_reward),
        fee_fraction=settings.fee_fraction,
    )
    ledger = ledger_compute(dataset_usage(dataset), pricing, multilabel_images_x_classes(dataset))
    ledger["currency"] = settings.currency
    ledger["fee_fraction"] = settings.fee_fraction
    # Beside the estimate above (answers x configured rewards): what providers actually paid.
    ledger["spend"] = [asdict(row) for row in dataset_spend(dataset.pk)]
    ledger["reviewers"] = dataset_reviewer_time(dataset)
    return ledger
