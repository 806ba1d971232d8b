"""Services of the micro-task queue: lease the next task, submit an answer once, release, expire leases.

Locks are always taken task row first, then assignment rows, so leasing, submitting and expiry never deadlock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from . import kinds
from .models import Assignment, AssignmentState, Task, TaskExclusion, TaskState


class QueueError(Exception):
    """A queue operation the caller cannot do; `code` maps to an HTTP status in the API."""

    code = "conflict"


class LeaseExpired(QueueError):
    code = "lease_expired"


class AlreadySubmitted(QueueError):
    code = "already_submitted"


# The task's subjects that the worker's view of an assignment shows: loaded with the locked task row (only the
# task row is locked) so answering the request needs no further query.
WORKER_VIEW_RELATED = ("image", "concept")


def lease_duration() -> timedelta:
    return timedelta(seconds=settings.CROWDLABEL["LEASE_SECONDS"])


def available_tasks(
    *, worker, kinds_wanted: list[str] | None = None, dataset_id: int | None = None, now=None
):
    """Tasks this worker may lease now: open, or leased with an expired lease; never one they already had,
    never one they are excluded from."""
    now = now or timezone.now()
    qs = Task.objects.filter(Q(state=TaskState.OPEN) | Q(state=TaskState.LEASED, lease_expires_at__lt=now))
    if kinds_wanted:
        qs = qs.filter(kind__in=kinds_wanted)
    if dataset_id is not None:
        qs = qs.filter(dataset_id=dataset_id)
    return qs.filter(
        ~Exists(Assignment.objects.filter(task=OuterRef("pk"), worker=worker)),
        ~Exists(TaskExclusion.objects.filter(task=OuterRef("pk"), worker=worker)),
    )


def task_lease_next(
    *,
    worker,
    kinds_wanted: list[str] | None = None,
    dataset_id: int | None = None,
    now: datetime | None = None,
) -> Assignment | None:
    """Lease the highest-priority eligible task to `worker` in one short transaction, or return None.

    On PostgreSQL concurrent callers skip each other's locked rows (SKIP LOCKED) instead of queueing behind
    them; on SQLite writes are serialized and the one-open-lease constraint catches the rare race."""
    for _attempt in range(3):
        now = now or timezone.now()
        try:
            with transaction.atomic():
                task = (
                    available_tasks(worker=worker, kinds_wanted=kinds_wanted, dataset_id=dataset_id, now=now)
                    .order_by("-priority", "id")
                    .select_related(*WORKER_VIEW_RELATED)
                    .select_for_update(skip_locked=True, of=("self",))
                    .first()
                )
                if task is None:
                    return None
                if task.state == TaskState.LEASED:  # reclaiming an expired lease
                    Assignment.objects.filter(task=task, state=AssignmentState.LEASED).update(
                        state=AssignmentState.EXPIRED
                    )
                expires_at = now + lease_duration()
                Task.objects.filter(pk=task.pk).update(
                    state=TaskState.LEASED, lease_expires_at=expires_at, updated_at=now
                )
                assignment = Assignment.objects.create(
                    task=task, worker=worker, state=AssignmentState.LEASED, expires_at=expires_at
                )
                task.state, task.lease_expires_at = TaskState.LEASED, expires_at
                assignment.task = task
                return assignment
        except IntegrityError:
            now = None  # someone else leased it first (SQLite); try the next one
            continue
    return None


@dataclass(frozen=True)
class SubmitResult:
    assignment: Assignment
    replayed: bool


def assignment_submit(
    *, assignment: Assignment, answer: Any, idempotency_key: str, now: datetime | None = None
) -> SubmitResult:
    """Store the worker's answer exactly once.

    A retry with the same Idempotency-Key returns the stored result and changes nothing; another key on a
    submitted assignment, or any submit after the lease expired, is refused."""
    now = now or timezone.now()
    if not idempotency_key or len(idempotency_key) > 128:
        raise ValueError("an Idempotency-Key of 1 to 128 characters is required")
    with transaction.atomic():
        task = (
            Task.objects.select_related(*WORKER_VIEW_RELATED)
            .select_for_update(of=("self",))
            .get(pk=assignment.task_id)
        )
        current = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if current.state == AssignmentState.SUBMITTED:
            if current.idempotency_key == idempotency_key:
                current.task = task
                return SubmitResult(current, replayed=True)
            raise AlreadySubmitted("this assignment was already submitted (with another Idempotency-Key)")
        if current.state != AssignmentState.LEASED or current.expires_at <= now:
            raise LeaseExpired("the lease on this task has expired; fetch a new task")
        kind = kinds.get(task.kind)
        cleaned = kind.clean_answer(task, answer)
        current.state = AssignmentState.SUBMITTED
        current.answer = cleaned
        current.idempotency_key = idempotency_key
        current.submitted_at = now
        current.save(update_fields=["state", "answer", "idempotency_key", "submitted_at"])
        # The task row is locked until commit, so its in-memory count is exact: no F() and no re-read needed,
        # and the kind's handler changes the same instance, which is written once.
        task.answers_count += 1
        task.state = TaskState.OPEN
        task.lease_expires_at = None
        current.task = task
        kind.on_submit(current)
        task.save(update_fields=["answers_count", "state", "lease_expires_at", "result", "updated_at"])
        return SubmitResult(current, replayed=False)


def assignment_release(*, assignment: Assignment, now: datetime | None = None) -> Assignment:
    """The worker skips the task: the lease ends at once and the task goes back to the queue for others."""
    now = now or timezone.now()
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=assignment.task_id)
        current = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if current.state == AssignmentState.RELEASED:
            return current
        if current.state != AssignmentState.LEASED:
            raise QueueError(f"only a leased assignment can be skipped; this one is {current.state}")
        current.state = AssignmentState.RELEASED
        current.save(update_fields=["state"])
        if task.state == TaskState.LEASED:
            task.state, task.lease_expires_at = TaskState.OPEN, None
            task.save(update_fields=["state", "lease_expires_at", "updated_at"])
        return current


def leases_expire(*, now: datetime | None = None, batch_size: int = 1000) -> int:
    """Return tasks whose lease ran out to the queue. Safe to run concurrently with leasing and submitting:
    rows locked by them are skipped and caught by the next run (or reclaimed on read by task_lease_next)."""
    now = now or timezone.now()
    expired = 0
    while True:
        with transaction.atomic():
            tasks = list(
                Task.objects.filter(state=TaskState.LEASED, lease_expires_at__lt=now)
                .order_by("id")
                .select_for_update(skip_locked=True)
                .values_list("pk", flat=True)[:batch_size]
            )
            if not tasks:
                return expired
            Assignment.objects.filter(
                task_id__in=tasks, state=AssignmentState.LEASED, expires_at__lt=now
            ).update(state=AssignmentState.EXPIRED)
            Task.objects.filter(pk__in=tasks).update(
                state=TaskState.OPEN, lease_expires_at=None, updated_at=now
            )
            expired += len(tasks)
