"""Reconciling MTurk's submitted assignments with our bundles and applying the gold app's pay decisions:
approve, reject with feedback (only when gold rejects), bonus with a UniqueRequestToken, and block on MTurk the
workers gold blocked.

Safe to run twice at once: each assignment row is locked (SKIP LOCKED) while it is settled, so a concurrent
run passes it by; a settled row is never settled again; and if a run dies between MTurk's answer and our
commit, the next run reads MTurk's status before approving again and reuses the bonus's token, so nothing is
paid twice.

Disposing ends a finished dataset's HITs: expired at once, deleted once MTurk releases them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from botocore.exceptions import ClientError
from django.db import transaction
from django.utils import timezone

from annotation.models import Task, TaskState
from crowd.models import (
    Bundle,
    BundleState,
    HitState,
    MturkAssignment,
    MturkAssignmentStatus,
    MturkHit,
    MturkWorkerBlock,
    Provider,
    Worker,
    WorkerSource,
)
from gold.services import payments_decide

from .mturk import WORKABLE_HITS, bonus_fee, call, error_code, paginate, reward_fee
from .payments import PENDING, bundle_decisions, bundle_recommendation

REJECT_FEEDBACK = (
    "Several answers to check questions with known answers were wrong, and this account was blocked for this "
    "dataset. Answers to ordinary questions never lead to a rejection."
)
BONUS_REASON = "Thank you: your answers to our check questions were consistently right."


@dataclass
class SyncReport:
    seen: int = 0
    approved: int = 0
    rejected: int = 0
    bonuses: int = 0
    waiting: int = 0
    unmatched: int = 0
    skipped_locked: int = 0
    blocked: int = 0


def _mturk_status(mturk, assignment_id: str, sleep) -> str:
    return call(mturk, "get_assignment", sleep=sleep, AssignmentId=assignment_id)["Assignment"][
        "AssignmentStatus"
    ]


def _approve(mturk, row: MturkAssignment, sleep) -> None:
    try:
        call(mturk, "approve_assignment", sleep=sleep, AssignmentId=row.assignment_id)
    except ClientError as exc:  # approved by an earlier run that died before its commit?
        if error_code(exc) != "RequestError" or _mturk_status(mturk, row.assignment_id, sleep) != "Approved":
            raise


def _reject(mturk, row: MturkAssignment, sleep) -> None:
    try:
        call(
            mturk,
            "reject_assignment",
            sleep=sleep,
            AssignmentId=row.assignment_id,
            RequesterFeedback=REJECT_FEEDBACK,
        )
    except ClientError as exc:
        if error_code(exc) != "RequestError" or _mturk_status(mturk, row.assignment_id, sleep) != "Rejected":
            raise


def _bonus(mturk, row: MturkAssignment, amount: Decimal, sleep) -> None:
    try:
        call(
            mturk,
            "send_bonus",
            sleep=sleep,
            WorkerId=row.mturk_worker_id,
            BonusAmount=str(amount),
            AssignmentId=row.assignment_id,
            Reason=BONUS_REASON,
            UniqueRequestToken=f"bonus-{row.assignment_id}"[:64],
        )
    except ClientError as exc:  # the token was used: an earlier run paid this bonus already
        message = exc.response.get("Error", {}).get("Message", "").lower()
        if error_code(exc) != "RequestError" or "token" not in message:
            raise


def assignment_settle(mturk, hit: MturkHit, found: dict, report: SyncReport, sleep=time.sleep) -> None:
    """Decide one submitted assignment, inside one transaction holding its row lock."""
    assignment_id = found["AssignmentId"]
    MturkAssignment.objects.get_or_create(
        assignment_id=assignment_id,
        defaults={
            "hit": hit,
            "mturk_worker_id": found["WorkerId"],
            "status": MturkAssignmentStatus.SUBMITTED,
        },
    )
    with transaction.atomic():
        row = (
            MturkAssignment.objects.select_for_update(skip_locked=True)
            .filter(assignment_id=assignment_id)
            .first()
        )
        if row is None:
            report.skipped_locked += 1
            return
        if row.status in (MturkAssignmentStatus.APPROVED, MturkAssignmentStatus.REJECTED):
            return
        bundle = Bundle.objects.filter(provider=Provider.MTURK, external_ref=assignment_id).first()
        if (
            bundle is None
            or bundle.state != BundleState.COMPLETE
            or found["WorkerId"] != row.mturk_worker_id
            or row.hit_id != hit.pk
        ):
            # Submitted without finishing the work in our page, or by other ids than the page was opened
            # with: an organizer looks at it (never auto-reject), and nothing is paid.
            row.status = MturkAssignmentStatus.UNMATCHED
            row.save(update_fields=["status"])
            report.unmatched += 1
            return
        if not row.confirmed:  # MTurk's own list names this worker and HIT: the page's ids were true
            row.confirmed = True
            row.save(update_fields=["confirmed"])
        decision = bundle_recommendation(bundle_decisions([bundle], refresh=False).get(bundle.pk, []))
        if decision == PENDING:
            report.waiting += 1
            return
        if decision == "reject":
            _reject(mturk, row, sleep)
            row.status = MturkAssignmentStatus.REJECTED
            report.rejected += 1
        else:
            _approve(mturk, row, sleep)
            row.status = MturkAssignmentStatus.APPROVED
            row.reward_paid = hit.hit_type.reward
            row.fees_paid = reward_fee(row.reward_paid, hit.max_assignments)
            report.approved += 1
            amount = hit.hit_type.bonus
            if decision == "bonus" and amount > 0:
                _bonus(mturk, row, amount, sleep)
                row.bonus_paid = amount
                row.fees_paid += bonus_fee(amount)
                report.bonuses += 1
        row.bundle, row.decided_at = bundle, timezone.now()
        row.save(update_fields=["status", "bundle", "reward_paid", "bonus_paid", "fees_paid", "decided_at"])


BLOCK_REASON = "Too many wrong answers to check questions with known answers."


def workers_block(mturk, report: SyncReport, sleep=time.sleep) -> None:
    """Block on MTurk (requester-wide) each MTurk worker whom gold blocked in a dataset, once."""
    pending = (
        Worker.objects.filter(source=WorkerSource.MTURK, gold_blocks__isnull=False)
        .exclude(external_id__in=MturkWorkerBlock.objects.values("mturk_worker_id"))
        .values_list("external_id", flat=True)
        .distinct()
    )
    for worker_id in sorted(pending):
        with transaction.atomic():
            _, created = MturkWorkerBlock.objects.get_or_create(mturk_worker_id=worker_id)
            if not created:  # another sync blocked them meanwhile
                continue
            call(mturk, "create_worker_block", sleep=sleep, WorkerId=worker_id, Reason=BLOCK_REASON)
            report.blocked += 1


def hits_sync(mturk, *, dataset_id: int | None = None, sleep=time.sleep) -> SyncReport:
    """List every published HIT's submitted assignments (paginated) and settle each."""
    report = SyncReport()
    hits = MturkHit.objects.filter(state__in=WORKABLE_HITS).select_related("hit_type").order_by("id")
    if dataset_id is not None:
        hits = hits.filter(hit_type__dataset_id=dataset_id)
    datasets = sorted({hit.hit_type.dataset_id for hit in hits})
    for ds in datasets:
        payments_decide(dataset_id=ds)
    for hit in hits:
        for found in paginate(
            mturk,
            "list_assignments_for_hit",
            "Assignments",
            sleep=sleep,
            HITId=hit.hit_id,
            MaxResults=100,
            AssignmentStatuses=["Submitted"],
        ):
            report.seen += 1
            assignment_settle(mturk, hit, found, report, sleep)
    workers_block(mturk, report, sleep)
    return report


def dataset_kinds_finished() -> list[tuple[int, str]]:
    """(dataset, kind) pairs with HITs still on MTurk, tasks of that kind, and none of them left open or
    leased: the work HITs were published for is done. (HITs published before their tasks were queued are not
    finished work; a later stage that queues new tasks of the kind needs new HITs.)"""
    pairs = set(
        MturkHit.objects.filter(state__in=WORKABLE_HITS).values_list("hit_type__dataset_id", "hit_type__kind")
    )
    if not pairs:
        return []
    datasets = {d for d, _ in pairs}
    some = set(Task.objects.filter(dataset_id__in=datasets).values_list("dataset_id", "kind").distinct())
    busy = set(
        Task.objects.filter(dataset_id__in=datasets, state__in=(TaskState.OPEN, TaskState.LEASED))
        .values_list("dataset_id", "kind")
        .distinct()
    )
    return sorted((pairs & some) - busy)


@dataclass
class DisposeReport:
    expired: int = 0
    deleted: int = 0
    kept: int = 0  # MTurk still holds assignments in progress or awaiting our decision: the next run retries


def _hit_releasable(mturk, hit: MturkHit, sleep) -> bool:
    """MTurk deletes only Reviewable HITs whose submitted assignments are all approved or rejected."""
    found = call(mturk, "get_hit", sleep=sleep, HITId=hit.hit_id)["HIT"]
    if found.get("HITStatus") != "Reviewable" or found.get("NumberOfAssignmentsPending", 0):
        return False
    for _ in paginate(
        mturk,
        "list_assignments_for_hit",
        "Assignments",
        sleep=sleep,
        HITId=hit.hit_id,
        MaxResults=100,
        AssignmentStatuses=["Submitted"],
    ):
        return False
    return True


def hits_dispose(
    mturk, *, dataset_id: int, kind: str | None = None, now: datetime | None = None, sleep=time.sleep
) -> DisposeReport:
    """Expire the dataset's HITs (of one kind, or all) so that nobody new accepts them, then delete each once
    MTurk lets go of it: Reviewable, with every submitted assignment approved or rejected (run after a sync;
    the rest go on a later run). Idempotent: an expired HIT is not expired again, a deleted one is left."""
    report = DisposeReport()
    hits = MturkHit.objects.filter(hit_type__dataset_id=dataset_id, state__in=WORKABLE_HITS)
    if kind is not None:
        hits = hits.filter(hit_type__kind=kind)
    now = now or timezone.now()
    for hit in hits.order_by("id"):
        if hit.state == HitState.PUBLISHED:
            call(mturk, "update_expiration_for_hit", sleep=sleep, HITId=hit.hit_id, ExpireAt=now)
            MturkHit.objects.filter(pk=hit.pk, state=HitState.PUBLISHED).update(state=HitState.EXPIRED)
            report.expired += 1
        if not _hit_releasable(mturk, hit, sleep):
            report.kept += 1
            continue
        try:
            call(mturk, "delete_hit", sleep=sleep, HITId=hit.hit_id)
        except ClientError as exc:
            if error_code(exc) != "RequestError":
                raise
            report.kept += 1  # an assignment came in meanwhile: kept for the next run
            continue
        MturkHit.objects.filter(pk=hit.pk).update(state=HitState.DISPOSED)
        report.deleted += 1
    return report


def hits_dispose_finished(mturk, *, now: datetime | None = None, sleep=time.sleep) -> DisposeReport:
    """`hits_dispose` for every (dataset, kind) whose work is done (`dataset_kinds_finished`)."""
    total = DisposeReport()
    for dataset_id, kind in dataset_kinds_finished():
        one = hits_dispose(mturk, dataset_id=dataset_id, kind=kind, now=now, sleep=sleep)
        total.expired += one.expired
        total.deleted += one.deleted
        total.kept += one.kept
    return total
