"""Deciding many review items at once (a reviewer selects the identical items in view and takes one decision):
each item is leased to the reviewer and decided through `review_decide`, in a transaction of its own.

One transaction per item, not one for all: the items are independent facts, and one that changed meanwhile (a
box of its pair removed by another decision, another reviewer holding it, a pipeline that moved on) must not
undo the decisions on the others; each item's outcome is reported instead. Every item is idempotent: sending
the same list again reports the items this reviewer already decided that way as `already_decided` and changes
nothing. A decision the pipeline holds for confirmation (against a clear crowd lean) is never confirmed by a
bulk request, so a retried request cannot turn one decision into two agreeing ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from .decisions import held_decision, review_decide
from .errors import InvalidDecision, ReviewError, SubjectGone
from .leasing import review_lease_duration
from .models import Decision, ItemState
from .scan import dismiss
from .selectors import reviewer_items

BULK_LIMIT = 200  # items per request: one page of the reviewer's list, with room to spare


@dataclass(frozen=True)
class BulkOutcome:
    item: int
    status: str  # decided, held, already_decided, refused
    decision: int | None = None  # the decision row (new, or the earlier one for already_decided)
    detail: str = ""


def review_decide_many(
    *, item_ids: Sequence[int], reviewer, decision: str, reason: str = "", now: datetime | None = None
) -> list[BulkOutcome]:
    """Decide each item of `item_ids` (in the order given, repeats ignored) with `decision`; one outcome each."""
    now = now or timezone.now()
    outcomes = []
    for item_id in dict.fromkeys(item_ids):
        try:
            outcomes.append(_decide_one(item_id, reviewer, decision, reason, now))
        except SubjectGone as exc:
            dismiss([item_id])  # as a single decision does: the item no longer applies
            outcomes.append(BulkOutcome(item_id, "refused", detail=str(exc)))
        except (InvalidDecision, ReviewError) as exc:
            outcomes.append(BulkOutcome(item_id, "refused", detail=str(exc)))
    return outcomes


def _decide_one(item_id: int, reviewer, decision: str, reason: str, now: datetime) -> BulkOutcome:
    with transaction.atomic():
        item = (
            reviewer_items(reviewer).select_for_update(no_key=True, of=("self",)).filter(pk=item_id).first()
        )
        if item is None:
            return BulkOutcome(item_id, "refused", detail="no review item has this id")
        if item.state == ItemState.DECIDED:
            latest = item.decisions.exclude(decision=Decision.UNDO).order_by("-id").first()
            if latest is not None and latest.reviewer_id == reviewer.pk and latest.decision == decision:
                return BulkOutcome(item_id, "already_decided", decision=latest.pk)
            return BulkOutcome(item_id, "refused", detail="this item was already decided")
        if item.state == ItemState.DISMISSED:
            return BulkOutcome(item_id, "refused", detail="this item no longer applies (dismissed)")
        if (
            item.state == ItemState.LEASED
            and item.leased_to_id != reviewer.pk
            and item.lease_expires_at is not None
            and item.lease_expires_at > now
        ):
            return BulkOutcome(item_id, "refused", detail="another reviewer holds this item")
        held = held_decision(item)
        if held is not None:
            latest = item.decisions.order_by("-id").first()
            if latest is not None and latest.reviewer_id == reviewer.pk and latest.decision == decision:
                return BulkOutcome(item_id, "held", decision=latest.pk, detail=held.get("message", ""))
            return BulkOutcome(
                item_id,
                "refused",
                detail="a decision on this item waits for confirmation: decide it on its own",
            )
        item.state, item.leased_to, item.lease_expires_at = (
            ItemState.LEASED,
            reviewer,
            now + review_lease_duration(),
        )
        item.save(update_fields=["state", "leased_to", "lease_expires_at", "updated_at"])
        row = review_decide(item=item, reviewer=reviewer, decision=decision, reason=reason)
        if (row.after or {}).get("held"):
            return BulkOutcome(item_id, "held", decision=row.pk, detail=row.after["held"].get("message", ""))
        return BulkOutcome(item_id, "decided", decision=row.pk)
