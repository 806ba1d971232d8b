"""Several tasks per request: lease up to N tasks at once, and submit several answers in one transaction, each
stored once under its own Idempotency-Key with a result of its own. The single lease and submit in `services`
stay the one definition of who may take a task and of what an answer changes; this module only runs them for
several tasks (the lease as one statement on PostgreSQL)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connections, transaction
from django.utils import timezone

from annotation import kinds
from annotation.models import Assignment, Task

from . import statements
from .contract import Draw, Lease, LeaseRequest, LeaseTerms, SubmitResult
from .services import QueueError, _lease, _request, assignment_submit, lease_duration, lease_terms

# The most tasks one lease and one batch of answers may hold: enough to prefetch a screenful of quick votes,
# small enough that a batch's transaction (and the rows one lease locks while it picks) stays short.
MANY_MAX = 50


def task_lease_many(
    *,
    worker,
    count: int,
    kinds_wanted: Sequence[str] | None = None,
    dataset_id: int | None = None,
    now: datetime | None = None,
    datasets: Sequence[int] | None = None,
) -> list[Lease]:
    """Lease up to `count` (1 to MANY_MAX) tasks to `worker` at once: what `count` single `task_lease` calls in
    a row would hand out, by the same rules (eligibility, grants, blocks, gold and its rate, datasets in turn).

    The registered lease policies are asked once, for the whole lease (`LeaseRequest.count`): a draw names
    the places it fills (`Draw.slots`) and a policy may cap the count (`LeaseTerms.most`). On PostgreSQL the
    lease is one statement with SKIP LOCKED (`statements.lease_many_postgresql`); elsewhere the single lease
    runs once per place in one transaction (SQLite serializes writers; a rare race with the one-open-lease
    constraint runs the whole lease again). An empty list when no task is available."""
    if not 1 <= count <= MANY_MAX:
        raise ValueError(f"a lease takes 1 to {MANY_MAX} tasks, not {count}")
    connection = connections[Task.objects.db]
    request = _request(kinds_wanted, dataset_id, datasets)
    request = LeaseRequest(request.kinds_wanted, request.dataset_id, request.datasets, count)
    for _attempt in range(3):
        now = now or timezone.now()
        terms = lease_terms(worker, request, now)
        wanted = count if terms.most is None else max(1, min(count, terms.most))
        draw = terms.draw
        slots = tuple(s for s in draw.slots if s < wanted) if draw is not None and draw.lease else ()
        if connection.features.has_select_for_update_skip_locked:
            return _lease_many_postgresql(connection, worker, request, now, terms, draw, slots, wanted)
        try:
            with transaction.atomic():
                return _lease_many_portable(connection, worker, request, now, terms, draw, slots, wanted)
        except IntegrityError:
            now = None  # someone else leased one of them first; lease again
    return []


def _lease_many_postgresql(
    connection, worker, request, now, terms: LeaseTerms, draw: Draw | None, slots, wanted: int
) -> list[Lease]:
    where, params = statements.eligible_where(
        connection, worker_id=worker.pk, request=request, now=now, terms=terms, draw=None
    )
    if draw is not None:
        # The draw's candidates are looked up whether or not any place takes one (no slots: LIMIT 0), so a
        # lease with gold in it runs the statement one without does.
        drawn_where, drawn_params = statements.eligible_where(
            connection, worker_id=worker.pk, request=request, now=now, terms=terms, draw=draw
        )
    else:
        drawn_where, drawn_params = "FALSE", []
    return statements.lease_many_postgresql(
        connection,
        worker=worker,
        where=where,
        params=params,
        drawn_where=drawn_where,
        drawn_params=drawn_params,
        slots=slots,
        count=wanted,
        now=now,
        duration=lease_duration(),
        note=draw.note if draw is not None else "",
    )


def _lease_many_portable(
    connection, worker, request, now, terms: LeaseTerms, draw: Draw | None, slots, wanted: int
) -> list[Lease]:
    """One single lease per place, in order, inside the caller's transaction: a drawn place takes the draw's
    first free candidate (an ordinary task when none is free), the others an ordinary task; each sees the
    leases before it, so no task comes twice and the datasets go round as they do for single leases."""
    leases: list[Lease] = []
    ordinary_left = True
    for place in range(wanted):
        leased = None
        if place in slots:
            leased = _lease(connection, worker=worker, request=request, now=now, terms=terms, draw=draw)
        if leased is None and ordinary_left:
            leased = _lease(connection, worker=worker, request=request, now=now, terms=terms, draw=None)
            ordinary_left = leased is not None
        if leased is not None:
            leases.append(leased)
        elif not any(s > place for s in slots):
            break
    return leases


# --- several answers in one transaction ------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One answer of a batch: the assignment it answers, the answer, and its own Idempotency-Key."""

    assignment_id: int
    answer: Any
    idempotency_key: str


@dataclass(frozen=True)
class AnswerResult:
    """What became of one answer of a batch: `stored` (with the submit's result, `replayed` when the key's
    answer was stored before) or refused with an HTTP-like `status`, a `code` and a `detail` a person can act
    on. Another worker's assignment is refused as an unknown one is (`not_found`)."""

    answer: Answer
    status: int
    code: str
    detail: str = ""
    result: SubmitResult | None = None

    @property
    def stored(self) -> bool:
        return self.result is not None


STORED, NOT_FOUND, ANSWER_INVALID = "stored", "not_found", "answer_invalid"


def assignments_submit_many(
    *, worker, answers: Sequence[Answer], now: datetime | None = None
) -> list[AnswerResult]:
    """Store several of `worker`'s answers in one transaction, each exactly as `assignment_submit` stores one
    (its own key, lock order, counters and effects), and say per answer what became of it, in their order.

    An answer the queue refuses (an unknown or another worker's assignment, an answer its kind rejects, an
    expired lease, an assignment already submitted with another key) is refused alone: its submit ran in a
    savepoint of its own (the one `assignment_submit` opens inside this transaction), which is rolled back,
    and the others are stored. So a batch sent again with the same keys stores nothing twice and answers
    each item as the first run did (`replayed` aside). A deadlock or serialization failure is not an item's
    refusal: it rolls the whole batch back, for the server to run it again."""
    if not 1 <= len(answers) <= MANY_MAX:
        raise ValueError(f"a batch holds 1 to {MANY_MAX} answers, not {len(answers)}")
    now = now or timezone.now()
    results = []
    with transaction.atomic():
        for item in answers:
            results.append(_submit_one(worker, item, now))
    return results


def _submit_one(worker, item: Answer, now: datetime) -> AnswerResult:
    try:
        result = assignment_submit(
            assignment=item.assignment_id,
            worker=worker,
            answer=item.answer,
            idempotency_key=item.idempotency_key,
            now=now,
        )
    except Assignment.DoesNotExist:
        return AnswerResult(item, 404, NOT_FOUND, "No such assignment.")
    except kinds.AnswerInvalid as exc:
        return AnswerResult(item, 400, ANSWER_INVALID, str(exc))
    except QueueError as exc:
        return AnswerResult(item, 409, exc.code, str(exc))
    return AnswerResult(item, 200, STORED, result=result)
