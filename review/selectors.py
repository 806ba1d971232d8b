"""Reads of the review app: available items, queue counts, and the finalized boxes exporters may use."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from annotation.models import Box, BoxState, Dataset
from annotation.scoping import reviewer_dataset_q

from .models import OPEN_STATES, ItemState, OverlapCheck, ReviewItem, ReviewKind


def review_items_available(
    *,
    now: datetime,
    dataset_id: int | None = None,
    kinds: Sequence[str] | None = None,
    exclude_ids: Sequence[int] = (),
    reviewer=None,
) -> QuerySet[ReviewItem]:
    """Items a reviewer may lease now: open, or leased with an expired lease; pairs only while both boxes
    are still accepted (one removed by another decision waits for the scan to dismiss it); none of an archived
    dataset or of an excluded image (they wait until it is restored or included again); with `reviewer`, only of the datasets they may review (a scoped
    reviewer's grants: `annotation.models.ReviewerGrant`)."""
    qs = (
        ReviewItem.objects.filter(
            Q(state=ItemState.OPEN) | Q(state=ItemState.LEASED, lease_expires_at__lt=now)
        )
        .filter(
            Q(kind=ReviewKind.AMBIGUOUS) | Q(box_a__state=BoxState.ACCEPTED, box_b__state=BoxState.ACCEPTED)
        )
        .filter(dataset__archived_at__isnull=True, image__excluded_at__isnull=True)
    )
    if dataset_id is not None:
        qs = qs.filter(dataset_id=dataset_id)
    if kinds:
        qs = qs.filter(kind__in=list(kinds))
    if exclude_ids:
        qs = qs.exclude(pk__in=list(exclude_ids))
    if reviewer is not None:
        qs = qs.filter(reviewer_dataset_q(reviewer))
    return qs


def reviewer_items(reviewer) -> QuerySet[ReviewItem]:
    """Every review item of the datasets `reviewer` may review: what they may decide, skip or look up by id (an
    item of another dataset answers like a missing one)."""
    return ReviewItem.objects.filter(reviewer_dataset_q(reviewer))


def review_summary(
    *, dataset_id: int | None = None, datasets: QuerySet[Dataset] | None = None
) -> dict[str, dict[str, int]]:
    """Item counts per kind and state, every combination present (zeros included), over `datasets` (default:
    every dataset) or the one `dataset_id` among them."""
    qs = ReviewItem.objects.all()
    if datasets is not None:
        qs = qs.filter(dataset__in=datasets)
    if dataset_id is not None:
        qs = qs.filter(dataset_id=dataset_id)
    counts = {kind.value: {state.value: 0 for state in ItemState} for kind in ReviewKind}
    for row in qs.order_by().values("kind", "state").annotate(n=Count("id")):
        counts[row["kind"]][row["state"]] = row["n"]
    return counts


def open_review_box_ids() -> tuple[QuerySet, QuerySet]:
    """The ids of the boxes an open review item is about, as two subqueries: the items' `box_a` and `box_b`
    where they have one (an item about an image has neither; no NULL in either, so `NOT IN` reads them as
    `IN` does). A set-wise reader filters `box__in=` each in its own query, which the database
    drives from the few open items; an EXISTS per row (or one OR of both) walks every box of the dataset
    (docs/scaling.md: 3.1 s at 3,000,000 boxes)."""
    open_items = ReviewItem.objects.filter(state__in=OPEN_STATES)
    return (
        open_items.filter(box_a__isnull=False).values("box_a"),
        open_items.filter(box_b__isnull=False).values("box_b"),
    )


def finalized_boxes(dataset: Dataset, include_open: bool = False) -> QuerySet[Box]:
    """The accepted boxes an exporter may publish as final labels.

    By default a box is final once its own gate is passed, whatever other boxes are doing: it is accepted,
    its overlaps with the other accepted boxes of its image were examined (`OverlapCheck`, written by
    `review.scan`), and no review item about it is open. `include_open=True` is the organizer's explicit
    choice to export every accepted box anyway."""
    boxes = Box.objects.filter(image__dataset=dataset, state=BoxState.ACCEPTED)
    if include_open:
        return boxes
    open_items = ReviewItem.objects.filter(state__in=OPEN_STATES)
    return boxes.filter(Exists(OverlapCheck.objects.filter(box_id=OuterRef("pk")))).exclude(
        Exists(open_items.filter(box_a=OuterRef("pk"))) | Exists(open_items.filter(box_b=OuterRef("pk")))
    )
