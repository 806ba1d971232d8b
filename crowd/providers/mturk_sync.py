"""Reconciling MTurk's submitted assignments with our bundles and applying the gold app's pay decisions:
approve, reject with feedback (only when gold rejects), bonus with a UniqueRequestToken, and block on MTurk the
workers gold blocked.

Safe to run twice at once: each assignment row is locked (SKIP LOCKED) while it is settled, so a concurrent
run passes it by; a settled row is never settled again; and if a run dies between MTurk's answer and our
commit, the next run reads MTurk's status before approving again and reuses the bonus's token, so nothing is
paid twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from botocore.exceptions import ClientError
from django.db import transaction
from django.utils import timezone

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

from .mturk import call, error_code, paginate
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
        if bundle is None or bundle.state != BundleState.COMPLETE or found["WorkerId"] != row.mturk_worker_id:
            # Submitted without finishing the work in our page: an organizer looks at it (never auto-reject).
            row.status = MturkAssignmentStatus.UNMATCHED
            row.save(update_fields=["status"])
            report.unmatched += 1
            return
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
            report.approved += 1
            amount = hit.hit_type.bonus
            if decision == "bonus" and amount > 0:
                _bonus(mturk, row, amount, sleep)
                row.bonus_paid = amount
                report.bonuses += 1
        row.bundle, row.decided_at = bundle, timezone.now()
        row.save(update_fields=["status", "bundle", "bonus_paid", "decided_at"])


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
    hits = MturkHit.objects.filter(state=HitState.PUBLISHED).select_related("hit_type").order_by("id")
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


EXPIRED = datetime(2015, 1, 1, tzinfo=UTC)  # any past instant: MTurk expires the HIT at once


def hits_dispose(mturk, *, dataset_id: int, sleep=time.sleep) -> tuple[int, int]:
    """Expire the dataset's published HITs (no new assignments) and delete those MTurk lets go of: MTurk keeps a
    HIT with assignments still awaiting a decision, so run this after a sync; the rest go on the next run.
    Returns (expired, deleted)."""
    expired = deleted = 0
    for hit in MturkHit.objects.filter(hit_type__dataset_id=dataset_id, state=HitState.PUBLISHED).order_by(
        "id"
    ):
        call(mturk, "update_expiration_for_hit", sleep=sleep, HITId=hit.hit_id, ExpireAt=EXPIRED)
        expired += 1
        try:
            call(mturk, "delete_hit", sleep=sleep, HITId=hit.hit_id)
        except ClientError as exc:
            if error_code(exc) != "RequestError":
                raise
            continue  # assignments still pending: kept for the next run
        MturkHit.objects.filter(pk=hit.pk).update(state=HitState.DISPOSED)
        deleted += 1
    return expired, deleted
