"""The dataset's usage from SQL aggregates (a fixed number of queries), priced by `organize.ledger`, and the
money providers actually paid (crowd.providers.spend)."""

from __future__ import annotations

from dataclasses import asdict

from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, Sum
from django.db.models.functions import Coalesce

from annotation.models import Assignment, AssignmentState, Dataset, Task
from consensus.models import DECIDED_STATES, Question
from crowd.providers.spend import dataset_spend
from hierarchy.models import QuestionNode
from multilabel.models import ImageLabeling

from .ledger import Pricing, UsageRow, ledger_compute
from .models import CostSettings


def dataset_usage(dataset: Dataset) -> list[UsageRow]:
    stage = Coalesce("question__kind", "kind")
    tasks = {
        (r["stage"], r["concept__wnid"] or ""): r["n"]
        for r in Task.objects.filter(dataset=dataset)
        .values("concept__wnid", stage=stage)
        .annotate(n=Count("id"))
    }
    spent = ExpressionWrapper(F("submitted_at") - F("leased_at"), output_field=DurationField())
    answers = {
        (r["stage"], r["task__concept__wnid"] or ""): (r["n"], r["seconds"])
        for r in Assignment.objects.filter(task__dataset=dataset, state=AssignmentState.SUBMITTED)
        .values("task__concept__wnid", stage=Coalesce("task__question__kind", "task__kind"))
        .annotate(n=Count("id"), seconds=Sum(spent))
    }
    decided = {
        (r["kind"], r["concept__wnid"]): r["n"]
        for r in Question.objects.filter(dataset=dataset, state__in=DECIDED_STATES)
        .values("kind", "concept__wnid")
        .annotate(n=Count("id"))
    }
    rows = []
    for key in sorted(set(tasks) | set(answers)):
        n, seconds = answers.get(key, (0, None))
        rows.append(
            UsageRow(
                stage=key[0],
                wnid=key[1],
                tasks=tasks.get(key, 0),
                answers=n,
                worker_seconds=round(seconds.total_seconds(), 1) if seconds else 0.0,
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
    return ledger
