"""The only writers of Task rows besides leasing and submitting: creating tasks (every pipeline's and gold's
alike, so ids, timestamps and columns come from one code path) and changing a task's own fields outside a
submit (a question paused or reopened by consensus, a voided vote's repair). Assignment rows are written only
by leasing, submitting, releasing, extending and expiring (`services`).

A test scans the code and watches the database to hold everyone else to it (tests/annotation/test_queue_writes.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation import counters
from annotation.models import Assignment, AssignmentState, Task

_WRITABLE = frozenset(
    {"state", "result", "priority", "answers_wanted", "answers_count", "lease_expires_at", "payload"}
)


def tasks_create(tasks: Iterable[Task], *, batch_size: int = 500) -> list[Task]:
    """Insert these unsaved tasks in order (ids follow the order given) and return them with their ids; the
    dataset's usage counters count them in the same transaction."""
    with transaction.atomic():
        created = Task.objects.bulk_create(list(tasks), batch_size=batch_size)
        counters.tasks_counted(created)
    return created


def assignments_import(assignments: Iterable[Assignment], *, batch_size: int = 500) -> list[Assignment]:
    """Insert finished assignments as history (a data import, a benchmark's seeded dataset): never a lease,
    so every row must already be submitted, released or expired."""
    rows = list(assignments)
    live = [a for a in rows if a.state == AssignmentState.LEASED]
    if live:
        raise ValueError("only finished assignments are imported; leases are taken through task_lease_next")
    with transaction.atomic():
        created = Assignment.objects.bulk_create(rows, batch_size=batch_size)
        _imported_answers_counted(created)
    return created


def _imported_answers_counted(assignments: list[Assignment]) -> None:
    submitted = [a for a in assignments if a.state == AssignmentState.SUBMITTED]
    tasks = Task.objects.in_bulk({a.task_id for a in submitted})
    per_task: dict[int, list[Assignment]] = {}
    for a in submitted:
        per_task.setdefault(a.task_id, []).append(a)
    groups: dict[tuple, tuple[Task, int, timedelta]] = {}
    for task_id, rows in per_task.items():
        task = tasks[task_id]
        key = (task.dataset_id, counters.task_stage(task), task.concept_id or 0)
        spent = sum((a.submitted_at - a.leased_at for a in rows if a.submitted_at), timedelta(0))
        _, n, total = groups.get(key, (task, 0, timedelta(0)))
        groups[key] = (task, n + len(rows), total + spent)
    for key in sorted(groups):
        task, n, total = groups[key]
        counters.answers_counted(task, answers=n, worker_time=total)


def task_create(**fields: Any) -> Task:
    """One new task (see `tasks_create`)."""
    (task,) = tasks_create([Task(**fields)])
    return task


def task_save(task: Task, fields: Iterable[str]) -> None:
    """Write these fields of an in-memory task (locked by the caller's transaction) and its `updated_at`."""
    names = sorted(set(fields))
    unknown = set(names) - _WRITABLE
    if unknown:
        raise ValueError(f"the queue keeps these task fields to itself: {', '.join(sorted(unknown))}")
    task.updated_at = timezone.now()
    task.save(update_fields=[*names, "updated_at"])


def tasks_update(task_ids: Iterable[int], **values: Any) -> int:
    """Set these fields on the given tasks; returns how many rows changed."""
    unknown = set(values) - _WRITABLE
    if unknown:
        raise ValueError(f"the queue keeps these task fields to itself: {', '.join(sorted(unknown))}")
    return Task.objects.filter(pk__in=list(task_ids)).update(**values, updated_at=timezone.now())
