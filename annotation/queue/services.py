"""Services of the micro-task queue: lease the next task, submit an answer once, release, extend and expire
leases. The SQL they run is in `statements`; what the apps above say about a lease or a submit arrives as
data (`contract`) through the registries of `annotation.hooks`.

Locks are always taken task row first, then assignment rows, so leasing, submitting and expiry never deadlock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connections, transaction
from django.utils import timezone

from annotation import counters, hooks, kinds
from annotation.models import Assignment, AssignmentState, Task, TaskState

from . import sqlrows, statements
from .contract import KEEP, Draw, IdempotencyKey, Lease, LeaseRequest, LeaseTerms, SubmitResult, TaskChange


class QueueError(Exception):
    """A queue operation the caller cannot do; `code` maps to an HTTP status in the API."""

    code = "conflict"


class LeaseExpired(QueueError):
    code = "lease_expired"


class AlreadySubmitted(QueueError):
    code = "already_submitted"


def lease_duration() -> timedelta:
    return timedelta(seconds=settings.CROWDLABEL["LEASE_SECONDS"])


def available_tasks(
    *,
    worker,
    kinds_wanted: list[str] | None = None,
    dataset_id: int | None = None,
    now=None,
    terms: LeaseTerms | None = None,
    draw: Draw | None = None,
    datasets: Sequence[int] | None = None,
    look_ahead: bool = False,
):
    """Tasks this worker may lease now under these terms (the lease's own condition, as a queryset for reports,
    the policies' look-ahead and tests). Without `terms`, the registered policies' terms apply, asked as a
    look-ahead when `look_ahead` (`LeaseRequest.look_ahead`: the starved sweep's question)."""
    connection = connections[Task.objects.db]
    now = now or timezone.now()
    request = _request(kinds_wanted, dataset_id, datasets, look_ahead)
    if terms is None:
        terms = lease_terms(worker, request, now)
    where, params = statements.eligible_where(
        connection, worker_id=worker.pk, request=request, now=now, terms=terms, draw=draw
    )
    return statements.tasks_where(connection, where, params)


def _request(kinds_wanted, dataset_id, datasets=None, look_ahead: bool = False) -> LeaseRequest:
    return LeaseRequest(
        tuple(kinds_wanted) if kinds_wanted else None,
        dataset_id,
        tuple(datasets) if datasets is not None else None,
        look_ahead=look_ahead,
    )


def lease_terms(worker, request: LeaseRequest, now: datetime, leaving_out=None) -> LeaseTerms:
    """The registered lease policies' terms for this one lease, combined; without the policy `leaving_out` when
    given (a policy asking what the others alone would offer: `consensus.standing_lease.held_back`)."""
    return LeaseTerms.combined(
        policy(worker, request, now) for policy in hooks.lease_policies if policy is not leaving_out
    )


def _lease(
    connection, *, worker, request, now, terms: LeaseTerms, draw: Draw | None, follows: int | None = None
) -> Lease | None:
    where, params = statements.eligible_where(
        connection, worker_id=worker.pk, request=request, now=now, terms=terms, draw=draw
    )
    lease = (
        statements.lease_postgresql
        if connection.features.has_select_for_update_skip_locked
        else statements.lease_portable
    )
    note = draw.note if draw is not None else ""
    return lease(
        connection,
        worker=worker,
        where=where,
        params=params,
        now=now,
        duration=lease_duration(),
        note=note,
        drawn=draw is not None,
        follows=follows,
    )


def _look(connection, *, worker, request, now, terms: LeaseTerms, drawn: bool) -> None:
    draw = terms.draw if drawn else None
    where, params = statements.eligible_where(
        connection, worker_id=worker.pk, request=request, now=now, terms=terms, draw=draw
    )
    statements.candidate_look(connection, worker=worker, where=where, params=params, drawn=drawn)


def task_lease_next(
    *,
    worker,
    kinds_wanted: Sequence[str] | None = None,
    dataset_id: int | None = None,
    now: datetime | None = None,
    datasets: Sequence[int] | None = None,
) -> Assignment | None:
    """The assignment of `task_lease`, for callers that show the worker no page (scripts, simulations)."""
    leased = task_lease(
        worker=worker, kinds_wanted=kinds_wanted, dataset_id=dataset_id, now=now, datasets=datasets
    )
    return None if leased is None else leased.assignment


def task_lease(
    *,
    worker,
    kinds_wanted: Sequence[str] | None = None,
    dataset_id: int | None = None,
    now: datetime | None = None,
    follows: int | None = None,
    datasets: Sequence[int] | None = None,
) -> Lease | None:
    """Lease the next eligible task to `worker` in one short transaction, or return None: datasets in turn,
    the highest priority first inside a dataset (see `statements._candidate_sql`).

    The registered lease policies say what is withheld and may draw from a reserved pool (gold); a draw is
    leased by the very statement an ordinary lease runs, with the same stamps and columns. On PostgreSQL the
    lease is one statement (atomic on its own, so no BEGIN/COMMIT round trips) and concurrent callers skip
    each other's locked rows (SKIP LOCKED) instead of queueing behind them; on SQLite writes are serialized and
    the one-open-lease constraint catches the rare race. `follows` names the submitted assignment whose answer
    asked for this lease (`assignment_submit`'s `lease_next`): the lease statement records the lease on it.
    `datasets` narrows the lease to a session's scope (a study link's datasets); the worker's own grants
    (`DatasetGrant`) apply to every lease. The lease carries what the worker's page shows with the task
    (`Lease`: examples and instructions), read by the lease statement itself."""
    connection = connections[Task.objects.db]
    request = _request(kinds_wanted, dataset_id, datasets)
    for _attempt in range(3):
        now = now or timezone.now()
        terms = lease_terms(worker, request, now)
        draws = [terms.draw, None] if terms.draw is not None and terms.draw.lease else [None]
        if terms.draw is not None:
            # A lease that takes a draw and one that could have (the policy looked candidates up) run the same
            # statements: the candidate SELECT of the side not taken runs too, so timing tells neither apart.
            _look(
                connection, worker=worker, request=request, now=now, terms=terms, drawn=not terms.draw.lease
            )
        # On PostgreSQL the lease is one statement, atomic on its own; elsewhere it takes a transaction.
        one_statement = connection.features.has_select_for_update_skip_locked
        try:
            for draw in draws:
                with contextlib.nullcontext() if one_statement else transaction.atomic():
                    leased = _lease(
                        connection,
                        worker=worker,
                        request=request,
                        now=now,
                        terms=terms,
                        draw=draw,
                        follows=follows,
                    )
                if leased is not None:
                    return leased
            return None
        except IntegrityError:
            now = None  # someone else leased it first (SQLite); try the next one
            continue
    return None


def assignment_submit(
    *,
    assignment: Assignment | int,
    answer: Any,
    idempotency_key: IdempotencyKey | str,
    worker=None,
    now: datetime | None = None,
    lease_next: LeaseRequest | None = None,
) -> SubmitResult:
    """Store the worker's answer exactly once.

    A retry with the same Idempotency-Key returns the stored result and changes nothing; another key on a
    submitted assignment, or any submit after the lease expired, is refused. With `worker`, an assignment that
    is not theirs is `Assignment.DoesNotExist`. The kind's handler (or a submit interceptor) returns what
    changes on the task, which is written here with the queue's own fields; the registered submit extras are
    computed in the same transaction and returned in the result.

    With `lease_next` (which needs `worker`), the worker's next task is leased too, in the same transaction and
    after the answer has had its effects, exactly as a `task_lease_next` right after the submit would lease it:
    one round trip per task instead of two. A retry with the same key returns that same lease while the worker
    still holds it (it is remembered on the submitted assignment), or else leases the next one."""
    if lease_next is not None and worker is None:
        raise ValueError("leasing the next task on submit needs the worker")
    now = now or timezone.now()
    key = IdempotencyKey.parse(idempotency_key).value  # a no-op for a key the API already checked
    assignment_id = assignment if isinstance(assignment, int) else assignment.pk
    connection = connections[Assignment.objects.db]
    # The writes the answer causes (its task, the question's vote count or verdict, counters...) are held in
    # `writes`, passed to the handlers, and sent together (one statement on PostgreSQL) at `writes.send()`
    # below, before the next lease is read; its counters go last, in the platform's lock order (counters.held,
    # docs/architecture.md).
    with transaction.atomic(), sqlrows.Writes(connection) as writes, counters.held() as counted:
        current = statements.assignment_read(
            connection, assignment_id, worker.pk if worker is not None else None, lock=True
        )
        if worker is not None:
            # The read matched a.worker_id, so the hooks' `assignment.worker` costs no query.
            current.worker = worker
        task = current.task
        kind = kinds.get(task.kind)
        stored = False
        if current.state == AssignmentState.LEASED and current.expires_at > now:
            cleaned = kind.clean_answer(task, answer)
            # Every writer of an assignment locks its task first, so with the task row locked the state is
            # settled; the condition still guards against a row read before the lock was granted.
            changed = {
                "state": AssignmentState.SUBMITTED,
                "answer": cleaned,
                "idempotency_key": key,
                "submitted_at": now,
            }
            guard = {"state": ("=", AssignmentState.LEASED), "expires_at": (">", now)}
            stored = sqlrows.update(connection, Assignment, current.pk, changed, where=guard) == 1
            if not stored:
                current.refresh_from_db(fields=["state", "answer", "idempotency_key", "submitted_at"])
        if not stored:
            if current.state == AssignmentState.SUBMITTED:
                if current.idempotency_key == key:
                    return SubmitResult(
                        current,
                        replayed=True,
                        extras=_submit_extras(current),
                        next_lease=_lease_after(connection, current, worker, lease_next, now, replay=True),
                    )
                raise AlreadySubmitted("this assignment was already submitted (with another Idempotency-Key)")
            raise LeaseExpired("the lease on this task has expired; fetch a new task")
        for name, value in changed.items():
            setattr(current, name, value)
        # The task row is locked until commit, so the count is exact: no F() and no re-read needed. The
        # handler sees the task as it was leased plus this answer counted; what it returns is written once.
        task.answers_count += 1
        task.state, task.lease_expires_at = TaskState.OPEN, None
        change = _intercepted(current, writes)
        if change is None:
            change = kind.on_submit(current, writes) or TaskChange()
        written = {
            "answers_count": task.answers_count,
            "state": change.state if change.state is not None else TaskState.OPEN,
            "lease_expires_at": None,
            "updated_at": now,
        }
        if change.result is not KEEP:
            written["result"] = change.result
        writes.update(Task, task.pk, written)
        for name, value in written.items():
            setattr(task, name, value)
        counters.answers_counted(
            task, answers=1, worker_time=now - current.leased_at, worker_id=current.worker_id
        )
        counted.flush(writes)
        # Everything the answer changes reaches the database here, before the extras and the next lease read
        # it (and so that a failure is this submit's own).
        writes.send()
        return SubmitResult(
            current,
            replayed=False,
            extras=_submit_extras(current),
            next_lease=_lease_after(connection, current, worker, lease_next, now, replay=False),
        )


def _lease_after(
    connection, submitted: Assignment, worker, request: LeaseRequest | None, now: datetime, *, replay: bool
) -> Lease | None:
    """The next lease a submit asked for (None when it asked for none, or no task is available), taken inside
    the submit's transaction so that the answer and the lease are stored together or not at all, and its id
    kept on the submitted assignment. A replay returns the kept lease while it is still this worker's open
    lease; one that has ended since (answered after a reload, released, expired) is followed by a new one."""
    if request is None:
        return None
    if replay and submitted.next_lease_id is not None:
        try:
            kept = statements.assignment_read(connection, submitted.next_lease_id, worker.pk)
        except Assignment.DoesNotExist:
            kept = None
        if kept is not None and kept.state == AssignmentState.LEASED and kept.expires_at > now:
            kept.worker = worker
            return Lease(kept)  # its page's examples and instructions are looked up
    leased = task_lease(
        worker=worker,
        kinds_wanted=request.kinds_wanted,
        dataset_id=request.dataset_id,
        now=now,
        follows=submitted.pk,
        datasets=request.datasets,
    )
    if leased is not None:
        submitted.next_lease_id = leased.assignment.pk  # written by the lease statement itself
    return leased


def _intercepted(assignment: Assignment, writes: sqlrows.Writes) -> TaskChange | None:
    for intercept in hooks.submit_interceptors:
        change = intercept(assignment, writes)
        if change is not None:
            return change
    return None


def _submit_extras(assignment: Assignment) -> dict[str, Any]:
    extras: dict[str, Any] = {}
    for fn in hooks.submit_extras:
        extras.update(fn(assignment))
    return extras


def assignment_release(*, assignment: Assignment, now: datetime | None = None) -> Assignment:
    """The worker skips the task: the lease ends at once and the task goes back to the queue for others."""
    now = now or timezone.now()
    with transaction.atomic():
        task = Task.objects.select_for_update(no_key=True).get(pk=assignment.task_id)
        current = Assignment.objects.select_for_update(no_key=True).get(pk=assignment.pk)
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


def assignment_extend(*, assignment: Assignment, now: datetime | None = None) -> Assignment:
    """The worker is still at the task (drawing a box takes a while): the lease runs for a full lease duration
    from now. Only a live lease can be extended; one that ran out may already belong to someone else."""
    now = now or timezone.now()
    with transaction.atomic():
        task = Task.objects.select_for_update(no_key=True).get(pk=assignment.task_id)
        current = Assignment.objects.select_for_update(no_key=True).get(pk=assignment.pk)
        if current.state != AssignmentState.LEASED or current.expires_at <= now:
            raise LeaseExpired("the lease on this task has ended; fetch a new task")
        current.expires_at = now + lease_duration()
        current.save(update_fields=["expires_at"])
        task.lease_expires_at = current.expires_at
        task.save(update_fields=["lease_expires_at", "updated_at"])
        current.task = task
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
                .select_for_update(skip_locked=True, no_key=True)
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
