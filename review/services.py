"""State changes of the review queues: requesting the overlap scan (`review.scan`), leasing an item, deciding
it, undoing a decision, and queueing ambiguous items from other pipelines (ILSVRC Appendix E).

Locks are always taken item row first, then box rows in id order, then the boxes' image rows, so decisions,
undos and the overlap check never deadlock; other items touched as a side effect are locked with SKIP LOCKED
and never waited for.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from annotation import counters
from annotation.models import Box, BoxState, Dataset, Image
from outbox import services as outbox

from . import resolvers
from .final_boxes import final_boxes_sync
from .models import (
    DECISIONS_BY_KIND,
    OPEN_STATES,
    Decision,
    ItemState,
    ReviewDecision,
    ReviewItem,
    ReviewKind,
    ScanState,
)
from .scan import (  # noqa: F401  (the scan's entry points, for callers of the review services)
    ScanReport,
    boxes_recheck,
    datasets_to_scan,
    dismiss,
    lock_images,
    overlap_thresholds,
    overlaps_check_images,
    overlaps_scan,
    pair_priority,
)
from .selectors import review_items_available


class ReviewError(Exception):
    """A review operation the caller cannot do now; the API answers 409 with the message."""

    code = "conflict"


class NotLeaseHolder(ReviewError):
    code = "not_lease_holder"


class AlreadyDecided(ReviewError):
    code = "already_decided"


class BoxesChanged(ReviewError):
    code = "boxes_changed"


class SubjectGone(ReviewError):
    """The pipeline no longer needs this item (its question or job moved on): the item is dismissed."""

    code = "subject_gone"


class InvalidDecision(ValueError):
    """The decision does not fit the item (wrong kind, missing or useless new class); the API answers 400."""


# ---------------------------------------------------------------------------------------------------------
# The overlap scan (review/scan.py) and its requests
# ---------------------------------------------------------------------------------------------------------

# Items a pipeline waits on (a question in review holds up its labeling or box job) come before every pair,
# which only holds back the export: pairs range from 0 to 100.
PIPELINE_PRIORITY = 101


def overlaps_scan_request(dataset_id: int, *, now: datetime | None = None, at_once: bool = False) -> bool:
    """Queue a scan of the dataset unless one is queued and not started; True when this call queued it. Runs
    outside the caller's transaction (on commit): one guarded UPDATE, no lock held.

    A failed check's request (the default) is debounced: refused within the debounce period after a scan
    finished, and run that period later, so a burst of failures makes one scan. An organizer's request
    (`at_once`) runs now and is refused only by a scan queued and not started yet (which will cover its
    boxes): an organizer who asks for the labels to be brought up to date waits for no timer."""
    now = now or timezone.now()
    debounce = settings.CROWDLABEL["REVIEW_SCAN_DEBOUNCE_SECONDS"]
    # A request older than a few debounce periods belongs to a scan that was lost (a worker died): ask again.
    stale = now - timedelta(seconds=max(60, 10 * debounce))
    recent = now - timedelta(seconds=debounce)
    ScanState.objects.get_or_create(dataset_id=dataset_id)
    with transaction.atomic():  # the request and its outbox row commit together
        free = ScanState.objects.filter(dataset_id=dataset_id).filter(
            Q(scan_requested_at__isnull=True) | Q(scan_requested_at__lt=stale)
        )
        if not at_once:
            free = free.filter(Q(last_finished_at__isnull=True) | Q(last_finished_at__lt=recent))
        queued = free.update(scan_requested_at=now)
        if queued:
            outbox.message_enqueue(
                "review.tasks.overlaps_scan",
                (dataset_id,),
                dataset_id=dataset_id,
                countdown=0 if at_once else debounce,
            )
    return bool(queued)


def overlaps_scan_requested_clear(dataset: Dataset) -> None:
    """A requested scan is starting: later requests queue a new one."""
    ScanState.objects.filter(dataset=dataset, scan_requested_at__isnull=False).update(scan_requested_at=None)


# ---------------------------------------------------------------------------------------------------------
# Leasing
# ---------------------------------------------------------------------------------------------------------


def review_lease_duration() -> timedelta:
    return timedelta(seconds=settings.CROWDLABEL["REVIEW_LEASE_SECONDS"])


def review_lease_next(
    *,
    reviewer,
    dataset_id: int | None = None,
    kinds: Sequence[str] | None = None,
    skip: Sequence[int] = (),
    now: datetime | None = None,
) -> ReviewItem | None:
    """The reviewer's current item if they hold one, else lease the highest-priority available item.

    One short transaction; on PostgreSQL concurrent reviewers skip each other's locked rows. The guarded
    UPDATE makes a lost race (SQLite has no row locks) a retry instead of a double lease."""
    now = now or timezone.now()
    held = (
        ReviewItem.objects.filter(state=ItemState.LEASED, leased_to=reviewer, lease_expires_at__gt=now)
        .exclude(pk__in=list(skip))
        .order_by("id")
        .first()
    )
    if held is not None:
        return held
    for _attempt in range(3):
        with transaction.atomic():
            item = (
                review_items_available(
                    now=now, dataset_id=dataset_id, kinds=kinds, exclude_ids=skip, reviewer=reviewer
                )
                .order_by("-priority", "id")
                .select_for_update(skip_locked=True, no_key=True, of=("self",))
                .first()
            )
            if item is None:
                return None
            expires_at = now + review_lease_duration()
            taken = ReviewItem.objects.filter(
                pk=item.pk, state=item.state, lease_expires_at=item.lease_expires_at
            ).update(state=ItemState.LEASED, leased_to=reviewer, lease_expires_at=expires_at, updated_at=now)
            if taken:
                item.state, item.leased_to, item.lease_expires_at = ItemState.LEASED, reviewer, expires_at
                return item
    return None


def review_release(*, item: ReviewItem, reviewer) -> ReviewItem:
    """The reviewer skips the item: it goes back to the queue for others at once."""
    with transaction.atomic():
        item = ReviewItem.objects.select_for_update(no_key=True).get(pk=item.pk)
        if item.state != ItemState.LEASED or item.leased_to_id != reviewer.pk:
            raise NotLeaseHolder("this item is not leased to you")
        item.state, item.leased_to, item.lease_expires_at = ItemState.OPEN, None, None
        item.save(update_fields=["state", "leased_to", "lease_expires_at", "updated_at"])
        return item


# ---------------------------------------------------------------------------------------------------------
# Decisions and undo
# ---------------------------------------------------------------------------------------------------------


def _snapshot(boxes: Iterable[Box]) -> dict[str, dict[str, Any]]:
    return {str(b.pk): {"state": b.state, "concept": b.concept_id} for b in boxes}


def _lock_boxes(box_ids: Iterable[int]) -> dict[int, Box]:
    return {
        b.pk: b
        for b in Box.objects.select_for_update(no_key=True).filter(pk__in=sorted(box_ids)).order_by("pk")
    }


def _dismiss_items_of_removed(item: ReviewItem, removed: list[int]) -> list[int]:
    """Other open pairs of a removed box no longer need a reviewer; those locked right now are left to the
    scan's clean-up rather than waited for."""
    if not removed:
        return []
    ids = list(
        ReviewItem.objects.filter(state__in=OPEN_STATES)
        .exclude(pk=item.pk)
        .exclude(kind=ReviewKind.AMBIGUOUS)
        .filter(Q(box_a_id__in=removed) | Q(box_b_id__in=removed))
        .select_for_update(skip_locked=True, no_key=True)
        .values_list("pk", flat=True)
    )
    dismiss(ids)
    return sorted(ids)


def review_decide(
    *,
    item: ReviewItem,
    reviewer,
    decision: str,
    new_concept=None,
    reason: str = "",
    now: datetime | None = None,
) -> ReviewDecision:
    """Apply a reviewer's decision atomically and record it with before/after snapshots of the boxes.

    Only the reviewer holding the item's lease may decide it, once. Removing a box sets its state to
    REMOVED (never a delete); relabelling changes its concept; both are visible in the decision row. An
    ambiguous item whose pipeline moved on meanwhile (`SubjectGone`) is dismissed, and the error raised."""
    return review_decide_keyed(
        item=item, reviewer=reviewer, decision=decision, new_concept=new_concept, reason=reason
    ).decision


@dataclass(frozen=True)
class DecideResult:
    decision: ReviewDecision
    replayed: bool  # True: an earlier request with this Idempotency-Key made it; nothing changed now


class KeyReused(ReviewError):
    code = "idempotency_key_reused"


def review_decide_keyed(
    *,
    item: ReviewItem,
    reviewer,
    decision: str,
    new_concept=None,
    reason: str = "",
    idempotency_key: str = "",
) -> DecideResult:
    """`review_decide` with the client's Idempotency-Key (blank: none), as assignment submits take one: a
    request sent again with the same key (its answer lost, a 5xx, a connection cut after the commit) is
    answered with the decision the first one recorded, whatever the item's state now, and changes nothing.
    The key is looked up under the item's lock, so a retry racing its own first attempt waits for it and then
    finds its row. A key the reviewer used on another item is refused (KeyReused)."""
    try:
        return _review_decide(
            item=item,
            reviewer=reviewer,
            decision=decision,
            new_concept=new_concept,
            reason=reason,
            key=idempotency_key,
        )
    except SubjectGone:
        dismiss([item.pk])
        raise


def _review_decide(
    *, item: ReviewItem, reviewer, decision: str, new_concept, reason: str, key: str
) -> DecideResult:
    with transaction.atomic(), counters.held():
        item = ReviewItem.objects.select_for_update(no_key=True).get(pk=item.pk)
        if key:
            earlier = ReviewDecision.objects.filter(reviewer=reviewer, idempotency_key=key).first()
            if earlier is not None:
                if earlier.item_id != item.pk:
                    raise KeyReused(
                        f"this Idempotency-Key was used for a decision on item {earlier.item_id}; send a new "
                        "key with each decision"
                    )
                return DecideResult(earlier, replayed=True)
        if item.state == ItemState.DECIDED:
            raise AlreadyDecided("this item was already decided")
        if item.state != ItemState.LEASED or item.leased_to_id != reviewer.pk:
            raise NotLeaseHolder("this item is not leased to you: take it from the queue first")
        resolver = resolvers.get(item.subject)
        owned = resolver is not None and resolver.owns_box
        if decision not in decisions_for(item):
            allowed = ", ".join(decisions_for(item))
            what = (item.subject or {}).get("type") or item.kind
            raise InvalidDecision(
                f"{str(decision)!r} is not a decision for a {what} item; use one of: {allowed}"
            )
        relabel = decision in (Decision.RELABEL_A, Decision.RELABEL_B)
        if new_concept is not None and not relabel:
            raise InvalidDecision("a new class only goes with relabel_a or relabel_b")

        boxes = _lock_boxes(item.box_ids)
        if item.kind != ReviewKind.AMBIGUOUS:
            # A pair's decision and the overlap check of its image take turns (review.scan): the check never
            # reads the boxes half-decided, and the final boxes are synced by whoever comes second.
            lock_images(box.image_id for box in boxes.values())
        a, b = boxes.get(item.box_a_id or 0), boxes.get(item.box_b_id or 0)
        if item.kind != ReviewKind.AMBIGUOUS and any(x.state != BoxState.ACCEPTED for x in boxes.values()):
            raise BoxesChanged("a box of this pair was removed or rejected meanwhile; take the next item")
        before = _snapshot(boxes.values())
        removed: list[int] = []
        changed: list[Box] = []
        if decision in (Decision.DUPLICATE_KEEP_A, Decision.REMOVE_B):
            removed.append(b.pk)
        elif decision in (Decision.DUPLICATE_KEEP_B, Decision.REMOVE_A):
            removed.append(a.pk)
        elif relabel:
            target, other = (a, b) if decision == Decision.RELABEL_A else (b, a)
            concept_id = new_concept.pk if new_concept is not None else other.concept_id
            if concept_id == target.concept_id:
                raise InvalidDecision("the new class is the box's current class")
            target.concept_id = concept_id
            changed.append(target)
        elif decision in (Decision.ACCEPT, Decision.REJECT) and a is not None and not owned:
            if a.state == BoxState.REMOVED:
                raise BoxesChanged("the box of this item was removed meanwhile")
            a.state = BoxState.ACCEPTED if decision == Decision.ACCEPT else BoxState.REJECTED
            changed.append(a)
        for pk in removed:
            boxes[pk].state = BoxState.REMOVED
            changed.append(boxes[pk])
        for box in changed:
            box.save(update_fields=["state", "concept"])
        counters.boxes_counted(
            item.dataset_id,
            accepted=counters.accepted_delta(
                (before[str(b.pk)]["state"] for b in changed), (b.state for b in changed)
            ),
        )
        dismissed = _dismiss_items_of_removed(item, removed)

        row = ReviewDecision.objects.create(
            item=item,
            reviewer=reviewer,
            decision=decision,
            new_concept_id=changed[0].concept_id if relabel else None,
            before={"boxes": before},
            after={"boxes": _snapshot(boxes.values()), "dismissed_items": dismissed},
            reason=reason,
            idempotency_key=key,
        )
        item.state, item.leased_to, item.lease_expires_at = ItemState.DECIDED, None, None
        item.save(update_fields=["state", "leased_to", "lease_expires_at", "updated_at"])
        if resolver is not None:
            # The pipeline that sent the item acts on the decision (it may accept or discard the item's box);
            # the decision row, still uncommitted, records the boxes as the pipeline left them.
            held = resolver.apply(item, row)
            if isinstance(held, resolvers.Hold):
                return DecideResult(_hold(item, row, held), replayed=False)
            after = _snapshot(Box.objects.filter(pk__in=item.box_ids).order_by("pk"))
            if after != row.after["boxes"]:
                row.after = {**row.after, "boxes": after}
                ReviewDecision.objects.filter(pk=row.pk).update(after=row.after)
        _recheck_after(item, [box for box in changed if box.state == BoxState.ACCEPTED])
        final_boxes_sync(item.dataset, {box.image_id for box in boxes.values()})
        return DecideResult(row, replayed=False)


def _hold(item: ReviewItem, row: ReviewDecision, held: resolvers.Hold) -> ReviewDecision:
    """The pipeline asks for the decision to be taken again before it acts: the row records it as held, and
    the item goes back to the queue for a second decision (the first reviewer may take it again)."""
    row.after = {**row.after, "held": {"reason": held.reason, **held.detail}}
    ReviewDecision.objects.filter(pk=row.pk).update(after=row.after)
    item.state, item.leased_to, item.lease_expires_at = ItemState.OPEN, None, None
    item.save(update_fields=["state", "leased_to", "lease_expires_at", "updated_at"])
    return row


def held_decision(item: ReviewItem) -> dict[str, Any] | None:
    """The item's latest decision when it is held for a second one (what the pipeline said), else None."""
    latest = item.decisions.order_by("-id").values_list("after", flat=True).first()
    return (latest or {}).get("held") if item.state in OPEN_STATES else None


def decisions_for(item: ReviewItem) -> tuple[str, ...]:
    """The decisions a reviewer may take on the item: its kind's, or those of the pipeline that sent it."""
    resolver = resolvers.get(item.subject)
    if resolver is not None and resolver.decisions:
        return resolver.decisions
    return DECISIONS_BY_KIND[item.kind]


def _recheck_after(item: ReviewItem, boxes: list[Box]) -> None:
    if boxes:
        boxes_recheck(dataset=item.dataset, box_ids=[box.pk for box in boxes])


def undo_refusal(item: ReviewItem) -> str:
    """Why no decision on `item` can be undone (its pipeline has acted on it), or "" when one can."""
    resolver = resolvers.get(item.subject)
    return resolver.undo_refused if resolver is not None else ""


def review_undo(
    *, decision: ReviewDecision, organizer, reason: str = "", now: datetime | None = None
) -> ReviewDecision:
    """Revert a decision's effect on its boxes and reopen its item, recording the undo as its own row.

    Only the item's latest decision can be undone, once, and only while its boxes are as it left them. When the
    one undoing is the reviewer who decided (`organizer` is then that reviewer), the item goes back to them
    leased, so their review page shows it again for the right decision."""
    now = now or timezone.now()
    with transaction.atomic(), counters.held():
        item = ReviewItem.objects.select_for_update(no_key=True).get(pk=decision.item_id)
        decision = ReviewDecision.objects.get(pk=decision.pk)
        if decision.decision == Decision.UNDO:
            raise InvalidDecision("an undo cannot be undone: decide the item again instead")
        refused = undo_refusal(item)
        if refused:
            raise ReviewError(refused)
        if ReviewDecision.objects.filter(undoes=decision).exists():
            raise ReviewError("this decision was already undone")
        latest = item.decisions.order_by("-id").values_list("pk", flat=True).first()
        if item.state != ItemState.DECIDED or latest != decision.pk:
            raise ReviewError("only the latest decision of a decided item can be undone")
        after = decision.after.get("boxes", {})
        boxes = _lock_boxes(int(pk) for pk in after)
        lock_images(box.image_id for box in boxes.values())
        current = _snapshot(boxes.values())
        if current != after:
            raise BoxesChanged("the boxes changed after this decision (a later decision or pipeline step)")
        restored: list[Box] = []
        for pk, old in decision.before.get("boxes", {}).items():
            box = boxes[int(pk)]
            if (box.state, box.concept_id) != (old["state"], old["concept"]):
                box.state, box.concept_id = old["state"], old["concept"]
                box.save(update_fields=["state", "concept"])
                restored.append(box)
        counters.boxes_counted(
            item.dataset_id,
            accepted=counters.accepted_delta(
                (current[str(b.pk)]["state"] for b in restored), (b.state for b in restored)
            ),
        )
        reopened = list(
            ReviewItem.objects.filter(
                pk__in=decision.after.get("dismissed_items", []), state=ItemState.DISMISSED
            )
            .select_for_update(skip_locked=True, no_key=True)
            .values_list("pk", flat=True)
        )
        ReviewItem.objects.filter(pk__in=reopened).update(state=ItemState.OPEN)
        try:
            with transaction.atomic():
                row = ReviewDecision.objects.create(
                    item=item,
                    reviewer=organizer,
                    decision=Decision.UNDO,
                    undoes=decision,
                    before={"boxes": current},
                    after={"boxes": _snapshot(boxes.values()), "reopened_items": sorted(reopened)},
                    reason=reason,
                )
        except IntegrityError:
            raise ReviewError("this decision was already undone") from None
        item.state, item.leased_to, item.lease_expires_at = ItemState.OPEN, None, None
        if decision.reviewer_id == organizer.pk:
            item.state, item.leased_to = ItemState.LEASED, organizer
            item.lease_expires_at = now + review_lease_duration()
        item.save(update_fields=["state", "leased_to", "lease_expires_at", "updated_at"])
        _recheck_after(item, [box for box in restored if box.state == BoxState.ACCEPTED])
        final_boxes_sync(item.dataset, {box.image_id for box in boxes.values()})
        return row


# ---------------------------------------------------------------------------------------------------------
# Ambiguous items from other pipelines
# ---------------------------------------------------------------------------------------------------------


def ambiguous_enqueue(
    *,
    dataset: Dataset,
    subject: dict[str, Any],
    reason: str,
    box: Box | None = None,
    image: Image | None = None,
    priority: int = 0,
) -> ReviewItem:
    """Queue an item the crowd could not settle (a vote at its cap, a box job over its round cap) for a
    reviewer. `subject` names it, e.g. {"type": "consensus.question", "id": 12}; `image` is what the reviewer
    looks at (default: the box's image). The same subject is queued at most once while open, so calling again
    returns the open item."""
    if not isinstance(subject, dict) or not subject.get("type"):
        raise ValueError('subject must be a dict with a "type", e.g. {"type": "box_job", "id": 7}')
    key = json.dumps(subject, sort_keys=True, separators=(",", ":"))
    if len(key) > 200:
        raise ValueError("subject is too long: keep it to a type and an id or two")
    try:
        with transaction.atomic():
            return ReviewItem.objects.create(
                kind=ReviewKind.AMBIGUOUS,
                dataset=dataset,
                box_a=box,
                image_id=image.pk if image is not None else (box.image_id if box is not None else None),
                subject=subject,
                subject_key=key,
                reason=reason,
                priority=priority,
            )
    except IntegrityError:
        existing = ReviewItem.objects.filter(
            dataset=dataset, kind=ReviewKind.AMBIGUOUS, subject_key=key, state__in=OPEN_STATES
        ).first()
        if existing is None:
            raise
        return existing
