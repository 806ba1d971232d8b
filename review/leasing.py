"""Leasing review items: a reviewer takes the highest-priority available item for a bounded time, keeps the one
they hold, or hands it back to the queue (ILSVRC Appendix E)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .errors import NotLeaseHolder
from .models import ItemState, ReviewItem
from .selectors import review_items_available


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
