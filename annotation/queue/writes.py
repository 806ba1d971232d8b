"""The only writers of Task rows besides leasing and submitting: creating tasks (every pipeline's and gold's
alike, so ids, timestamps and columns come from one code path) and changing a task's own fields outside a
submit (a question paused or reopened by consensus, a voided vote's repair). Assignment rows are written only
by leasing, submitting, releasing, extending and expiring (`services`).

A test scans the code and watches the database to hold everyone else to it (tests/annotation/test_queue_writes.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.utils import timezone

from annotation.models import Assignment, AssignmentState, Task

_WRITABLE = frozenset(
    {"state", "result", "priority", "answers_wanted", "answers_count", "lease_expires_at", "payload"}
)


def tasks_create(tasks: Iterable[Task], *, batch_size: int = 500) -> list[Task]:
    """Insert these unsaved tasks in order (ids follow the order given) and return them with their ids."""
    return Task.objects.bulk_create(list(tasks), batch_size=batch_size)


def assignments_import(assignments: Iterable[Assignment], *, batch_size: int = 500) -> list[Assignment]:
    """Insert finished assignments as history (a data import, a benchmark's seeded dataset): never a lease,
    so every row must already be submitted, released or expired."""
    rows = list(assignments)
    live = [a for a in rows if a.state == AssignmentState.LEASED]
    if live:
        raise ValueError("only finished assignments are imported; leases are taken through task_lease_next")
    return Assignment.objects.bulk_create(rows, batch_size=batch_size)


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
