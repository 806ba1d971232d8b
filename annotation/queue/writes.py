"""The only writers of Task rows besides leasing and submitting: creating tasks (every pipeline's and gold's
alike, so ids, timestamps and columns come from one code path) and changing a task's own fields outside a
submit (a question paused or reopened by consensus, a voided vote's repair), and taking an answer back within
the undo window. Assignment rows are written only by leasing, submitting, releasing, extending and expiring
(`services`), and by that undo (here).

A test scans the code and watches the database to hold everyone else to it (tests/annotation/test_queue_writes.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from annotation import counters, hooks, kinds
from annotation.models import Assignment, AssignmentState, Task, TaskState

from . import statements
from .contract import KEEP, OPEN_POOL
from .services import QueueError, lease_duration

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


def assignment_dataset_named(sender, instance: Assignment, **kwargs) -> None:
    """pre_save of Assignment (connected in `AnnotationConfig.ready`): a row saved through the ORM names its
    task's dataset, as the lease statements and `assignments_import` write it."""
    if instance.dataset_id is None and instance.task_id is not None:
        instance.dataset_id = instance.task.dataset_id


def assignments_import(assignments: Iterable[Assignment], *, batch_size: int = 500) -> list[Assignment]:
    """Insert finished assignments as history (a data import, a benchmark's seeded dataset): never a lease,
    so every row must already be submitted, released or expired."""
    rows = list(assignments)
    live = [a for a in rows if a.state == AssignmentState.LEASED]
    if live:
        raise ValueError("only finished assignments are imported; leases are taken through task_lease_next")
    missing = {a.task_id for a in rows if a.dataset_id is None}
    if missing:  # each row names its task's dataset, as a lease writes it (bulk_create does not call save)
        dataset_of = dict(Task.objects.filter(pk__in=missing).values_list("pk", "dataset_id"))
        for a in rows:
            if a.dataset_id is None:
                a.dataset_id = dataset_of[a.task_id]
    with transaction.atomic():
        created = Assignment.objects.bulk_create(rows, batch_size=batch_size)
        _imported_answers_counted(created)
    return created


def _imported_answers_counted(assignments: list[Assignment]) -> None:
    submitted = [a for a in assignments if a.state == AssignmentState.SUBMITTED]
    answered = [a for a in assignments if a.state in (AssignmentState.SUBMITTED, AssignmentState.WITHDRAWN)]
    tasks = Task.objects.in_bulk({a.task_id for a in answered})
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
        counters.usage_answers_counted(task, answers=n, worker_time=total)
    # After every usage row, as on the submit path: a worker's row for each worker who answered (withdrawn
    # answers included, counted as none).
    per_worker: dict[int, dict[int, int]] = {}
    per_stage: dict[int, dict[tuple[int, str], tuple[int, int]]] = {}
    for a in answered:
        task = tasks[a.task_id]
        mine = per_worker.setdefault(task.dataset_id, {})
        counted = a.state == AssignmentState.SUBMITTED
        mine[a.worker_id] = mine.get(a.worker_id, 0) + counted
        stages = per_stage.setdefault(task.dataset_id, {})
        stage_key = (a.worker_id, counters.task_stage(task))
        spent = a.submitted_at - a.leased_at if counted and a.submitted_at else timedelta(0)
        answers, microseconds = stages.get(stage_key, (0, 0))
        stages[stage_key] = (answers + counted, microseconds + spent // timedelta(microseconds=1))
    for dataset_id in sorted(per_stage):  # in table order: the stage rows before the worker rows
        counters.worker_stages_counted(dataset_id, per_stage[dataset_id])
    for dataset_id in sorted(per_worker):
        counters.workers_counted(dataset_id, per_worker[dataset_id])


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
    if "state" in names and task.state in (TaskState.DONE, TaskState.CANCELLED):
        _open_lease_end(task, names)
    task.updated_at = timezone.now()
    task.save(update_fields=[*names, "updated_at"])


def _open_lease_end(task: Task, names: list[str]) -> None:
    """A task closed by something other than its lease holder's answer (a recount after voided votes, the stuck
    sweep, a vote recorded outside the queue) ends the lease a worker still holds on it: their answer is then
    refused as expired (fetch a new task) and their next lease is another task. Kept open, the lease came back
    to its worker on every `tasks/next` while every answer to it was refused (the soak's worker that submitted
    one closed question 247 times), and no expiry looks at a closed task. Its assignments after the task, in
    the lock order."""
    Assignment.objects.filter(task_id=task.pk, state=AssignmentState.LEASED).update(
        state=AssignmentState.EXPIRED
    )
    task.lease_expires_at = None
    if "lease_expires_at" not in names:
        names.append("lease_expires_at")


def tasks_lock(task_ids: Iterable[int | None]) -> dict[int, Task]:
    """Lock these tasks `FOR NO KEY UPDATE` in id order (the platform's lock order for several tasks,
    docs/architecture.md; None ids are skipped): the locked rows by id. Inside the caller's transaction."""
    ids = sorted({t for t in task_ids if t is not None})
    return {t.pk: t for t in Task.objects.select_for_update(no_key=True).filter(pk__in=ids).order_by("id")}


def tasks_update(task_ids: Iterable[int], **values: Any) -> int:
    """Set these fields on the given tasks; returns how many rows changed."""
    unknown = set(values) - _WRITABLE
    if unknown:
        raise ValueError(f"the queue keeps these task fields to itself: {', '.join(sorted(unknown))}")
    return Task.objects.filter(pk__in=list(task_ids)).update(**values, updated_at=timezone.now())


class UndoRefused(QueueError):
    code = "undo_refused"


class Withdrawn(NamedTuple):
    """An undo's outcome: the new lease on the task the answer was taken from, and whether this was a retry
    of an undo already done (the lease it made then, as it is now)."""

    lease: Assignment
    replayed: bool


def undo_window() -> timedelta:
    return timedelta(seconds=settings.CROWDLABEL["ANSWER_UNDO_SECONDS"])


def assignment_withdraw(*, assignment: int, worker, now: datetime | None = None) -> Withdrawn:
    """Take back `worker`'s answer on this assignment and lease its task to them again, in one transaction.

    Only within the undo window after the submit, only for a kind that can revert its answer upstream (its
    `on_withdraw`: a vote leaves its question's tally, a question already decided refuses) or a task an undo
    interceptor takes care of (gold: a reserved pool's tasks), and only while no other worker holds the task; otherwise UndoRefused and nothing changes. The
    answer stays on the assignment, now `withdrawn`; the task's answer count goes back down and a new lease
    (a new row) gives the task back. A retry of a done undo returns that lease and changes nothing. Another
    worker's assignment is `Assignment.DoesNotExist`. Locks: task row, then assignment rows."""
    now = now or timezone.now()
    task_id = (
        Assignment.objects.filter(pk=assignment, worker_id=worker.pk)
        .values_list("task_id", flat=True)
        .first()
    )
    if task_id is None:
        raise Assignment.DoesNotExist(f"no assignment {assignment}")
    connection = connections[Assignment.objects.db]
    with transaction.atomic():
        task = Task.objects.select_for_update(no_key=True).get(pk=task_id)
        current = Assignment.objects.select_for_update(no_key=True).get(pk=assignment)
        if current.state == AssignmentState.WITHDRAWN:
            again = (
                Assignment.objects.filter(task_id=task_id, worker_id=worker.pk, pk__gt=current.pk)
                .order_by("id")
                .values_list("pk", flat=True)
                .first()
            )
            return Withdrawn(statements.assignment_read(connection, again), replayed=True)
        if current.state != AssignmentState.SUBMITTED:
            raise UndoRefused(
                f"only a submitted answer can be taken back; this assignment is {current.state}"
            )
        window = undo_window()
        if current.submitted_at is None or now - current.submitted_at > window:
            raise UndoRefused(
                f"an answer can be taken back within {int(window.total_seconds())} seconds of sending it; this one stands"
            )
        kind = kinds.get(task.kind)
        if task.state == TaskState.LEASED:
            if task.lease_expires_at is not None and task.lease_expires_at > now:
                raise UndoRefused("another worker is answering this task now, so your answer stands")
            Assignment.objects.filter(task_id=task_id, state=AssignmentState.LEASED).update(
                state=AssignmentState.EXPIRED
            )
        current.task = task
        try:
            change = _withdraw_intercepted(current)
            if change is None:
                if kind.on_withdraw is None or task.pool != OPEN_POOL:
                    raise kinds.AnswerStands("this answer can no longer be taken back: its task is settled")
                change = kind.on_withdraw(current)
        except kinds.AnswerStands as exc:
            raise UndoRefused(str(exc)) from None
        Assignment.objects.filter(pk=current.pk).update(state=AssignmentState.WITHDRAWN)
        # A withdrawn answer leaves the cost ledger's counts as if it had never been given.
        counters.answers_counted(
            task,
            answers=-1,
            worker_time=-(current.submitted_at - current.leased_at),
            worker_id=current.worker_id,
        )
        expires_at = now + lease_duration()
        lease = Assignment.objects.create(
            task_id=task_id,
            dataset_id=task.dataset_id,
            worker_id=worker.pk,
            state=AssignmentState.LEASED,
            leased_at=now,
            expires_at=expires_at,
        )
        task.answers_count -= 1
        task.state, task.lease_expires_at = TaskState.LEASED, expires_at
        fields = ["answers_count", "state", "lease_expires_at"]
        if change.result is not KEEP:
            task.result = change.result
            fields.append("result")
        task_save(task, fields)
        return Withdrawn(statements.assignment_read(connection, lease.pk), replayed=False)


def _withdraw_intercepted(assignment: Assignment):
    for intercept in hooks.withdraw_interceptors:
        change = intercept(assignment)
        if change is not None:
            return change
    return None
