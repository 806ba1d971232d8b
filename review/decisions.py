"""Reviewer decisions and their undo: applied atomically, recorded with before/after snapshots of the boxes, an
undo as a row of its own; the pipeline that sent an item acts on its decision (`review.resolvers`).

Locks are always taken item row first, then box rows in id order, then the boxes' image rows, so decisions,
undos and the overlap check never deadlock; other items touched as a side effect are locked with SKIP LOCKED
and never waited for.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from annotation import counters
from annotation.models import Box, BoxState

from . import resolvers
from .errors import (
    AlreadyDecided,
    BoxesChanged,
    InvalidDecision,
    KeyReused,
    NotLeaseHolder,
    ReviewError,
    SubjectGone,
)
from .final_boxes import final_boxes_sync
from .leasing import review_lease_duration
from .models import (
    DECISIONS_BY_KIND,
    OPEN_STATES,
    Decision,
    ItemState,
    ReviewDecision,
    ReviewItem,
    ReviewKind,
)
from .scan import boxes_recheck, dismiss, lock_images


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
