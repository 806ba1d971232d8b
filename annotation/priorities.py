"""Organizers move a dataset's waiting work up or down: the open tasks of a stage and/or class get their priority
shifted by the same amount, so the pipelines' own boosts (calibration first, review questions first) keep their
order inside the group. Priorities order tasks inside their own dataset only (the queue takes datasets in turn),
so no shift pushes back another tenant's work. Gold's reserved pool is left alone: a gold item is served by its
own draw, and its priority stays what every new task of its kind has."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Count, F, Max, Min, Q
from django.db.models.functions import Greatest, Least

from . import queue
from .models import PRIORITY_LIMIT, Dataset, Task, TaskState

# A shift is at most PRIORITY_LIMIT either way; shifted priorities stay within twice that, so repeated shifts
# cannot run off (an organizer's own priority plus the pipelines' boosts fit inside).
PRIORITY_BOUND = 2 * PRIORITY_LIMIT
WAITING = (TaskState.OPEN, TaskState.LEASED)


def _waiting(dataset: Dataset):
    return Task.objects.filter(dataset=dataset, state__in=WAITING, pool=queue.OPEN_POOL)


def task_priority_groups(dataset: Dataset) -> list[dict]:
    """The dataset's waiting tasks grouped by stage (a question's kind, else the task kind) and class:
    [{"stage", "concept", "concept_name", "tasks", "min_priority", "max_priority"}], highest first."""
    rows = (
        _waiting(dataset)
        .values("topic", "kind", "concept__wnid", "concept__name")
        .annotate(tasks=Count("id"), low=Min("priority"), high=Max("priority"))
    )
    groups: dict[tuple[str, str], dict] = {}
    for row in rows:
        key = (row["topic"] or row["kind"], row["concept__wnid"] or "")
        group = groups.setdefault(
            key,
            {
                "stage": key[0],
                "concept": key[1],
                "concept_name": row["concept__name"] or "",
                "tasks": 0,
                "min_priority": row["low"],
                "max_priority": row["high"],
            },
        )
        group["tasks"] += row["tasks"]
        group["min_priority"] = min(group["min_priority"], row["low"])
        group["max_priority"] = max(group["max_priority"], row["high"])
    return sorted(groups.values(), key=lambda g: (-g["max_priority"], g["stage"], g["concept"]))


def tasks_reprioritize(*, dataset: Dataset, change: int, stage: str = "", concept=None) -> int:
    """Add `change` to the priority of the dataset's waiting open-pool tasks of `stage` (a question kind or a
    task kind; "" for every stage) and `concept` (None for every class), within ±PRIORITY_BOUND. Locks the
    rows in id order in one statement, then updates them; returns how many changed."""
    if not -PRIORITY_LIMIT <= change <= PRIORITY_LIMIT:
        raise ValueError(f"a shift is between -{PRIORITY_LIMIT} and {PRIORITY_LIMIT}")
    tasks = _waiting(dataset)
    if stage:
        tasks = tasks.filter(Q(topic=stage) | Q(topic="", kind=stage))
    if concept is not None:
        tasks = tasks.filter(concept=concept)
    with transaction.atomic():
        ids = list(tasks.select_for_update(no_key=True).order_by("id").values_list("id", flat=True))
        if not ids or change == 0:
            return 0
        shifted = Greatest(Least(F("priority") + change, PRIORITY_BOUND), -PRIORITY_BOUND)
        return queue.tasks_update(ids, priority=shifted)
