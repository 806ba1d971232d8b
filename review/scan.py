"""The overlap check (ILSVRC Appendix E): each accepted box is examined against the other accepted boxes of its
image once, and the pairs over a threshold are queued for a reviewer; an `OverlapCheck` row records it.

A box is checked when it is accepted (on commit of the transaction that accepted it) and by the catch-up
(`overlaps_scan`: the schedule, an export, `manage.py scan_overlaps`), which checks every accepted box still
without a record. Finality is per box (`selectors.finalized_boxes`): no box waits for another.
A catch-up is requested (`overlaps_scan_request`: by a failed check, debounced, or by an organizer, at once) and
run by `review.tasks.overlaps_scan` through the outbox.

Correct under concurrent commits: a check locks its images' rows and reads their accepted boxes after taking
the lock, and a box is only checked after its acceptance committed. Of two boxes of one image, the one checked
second therefore sees the first, whichever order their transactions committed in, and the pair is examined.
A change that invalidates a check (a relabel, a restored box) deletes the record under the same image lock.

Lock order: review item, boxes, images (decisions); images, then review items with SKIP LOCKED (checks): an
item a decision holds is never waited for (the catch-up's clean-up gets it later).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from annotation.models import Box, BoxState, Dataset, Image
from outbox import services as outbox

from .final_boxes import final_boxes_sync
from .models import OPEN_STATES, ConfusablePair, ItemState, OverlapCheck, ReviewItem, ReviewKind, ScanState
from .overlaps import (
    BoxArrays,
    OverlapThresholds,
    PairKind,
    find_overlap_pairs,
    find_overlap_pairs_for_changed,
)

logger = logging.getLogger(__name__)

# Keeps `IN (...)` lists well under SQLite's bound-parameter limit.
_IN_BATCH = 5000


@dataclass
class ScanReport:
    dataset_id: int
    finished: bool = False
    images_scanned: int = 0
    boxes_checked: int = 0
    pairs_found: int = 0
    items_created: int = 0
    items_reopened: int = 0
    items_dismissed: int = 0

    def add(self, other: ScanReport) -> None:
        for name in ("images_scanned", "boxes_checked", "pairs_found", "items_reopened", "items_dismissed"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def overlap_thresholds(dataset_id: int) -> OverlapThresholds:
    """The configured thresholds and the dataset's own confusable pairs (by concept id)."""
    conf = settings.CROWDLABEL
    return OverlapThresholds(
        duplicate_iou=conf["REVIEW_DUPLICATE_IOU"],
        cross_class_iou=conf["REVIEW_CROSS_CLASS_IOU"],
        confusable_iou=conf["REVIEW_CONFUSABLE_IOU"],
        confusable_pairs=frozenset(
            ConfusablePair.objects.filter(dataset_id=dataset_id).values_list("concept_a_id", "concept_b_id")
        ),
    )


def pair_priority(iou: float) -> int:
    # The most overlapping pairs first: they are the likeliest true duplicates or mislabels.
    return int(round(100 * iou))


def unchecked_boxes(dataset: Dataset | int):
    """Accepted boxes of the dataset whose overlaps were not examined yet (new, relabelled or restored)."""
    return Box.objects.filter(image__dataset=dataset, state=BoxState.ACCEPTED).filter(
        ~Exists(OverlapCheck.objects.filter(box_id=OuterRef("pk")))
    )


def lock_images(image_ids: Iterable[int]) -> None:
    """Take the row locks of these images in id order (a no-op on SQLite, where writers are serialized)."""
    ids = sorted(set(image_ids))
    if ids:
        list(
            Image.objects.select_for_update(no_key=True, of=("self",))
            .filter(pk__in=ids)
            .order_by("pk")
            .values_list("pk")
        )


def overlaps_check_images(
    dataset: Dataset,
    image_ids: Sequence[int],
    *,
    thresholds: OverlapThresholds | None = None,
    now: datetime | None = None,
) -> ScanReport:
    """Examine the unchecked accepted boxes of these images against every accepted box of their image, in one
    transaction holding the images' row locks: queue the pairs found, dismiss open pairs of those boxes that no
    longer qualify (or whose box left the accepted set), record each box's check, and sync the images' final
    boxes. Idempotent: a box already checked is not examined again."""
    now = now or timezone.now()
    thresholds = thresholds or overlap_thresholds(dataset.pk)
    report = ScanReport(dataset_id=dataset.pk)
    image_ids = sorted(set(image_ids))
    with transaction.atomic():
        lock_images(image_ids)
        # Read after the locks: every box whose acceptance committed before them is visible.
        boxes = _load_accepted(image_ids)
        checked = set(
            OverlapCheck.objects.filter(box_id__in=boxes.box_id.tolist()).values_list("box_id", flat=True)
        )
        changed_ids = [int(b) for b in boxes.box_id.tolist() if int(b) not in checked]
        report.images_scanned = len(image_ids)
        report.items_dismissed += _dismiss_orphans(ReviewItem.objects.filter(image_id__in=image_ids))
        if changed_ids:
            changed = np.array(changed_ids, dtype=np.int64)
            if len(changed_ids) == len(boxes):
                pairs = find_overlap_pairs(boxes, thresholds)
            else:
                pairs = find_overlap_pairs_for_changed(boxes, changed, thresholds)
            report.boxes_checked = len(changed_ids)
            report.pairs_found = len(pairs)
            found = _queue_pairs(dataset, boxes, pairs)
            report.items_reopened += _reopen_dismissed(found)
            report.items_dismissed += _dismiss_stale(changed_ids, found)
            OverlapCheck.objects.bulk_create(
                (OverlapCheck(box_id=pk, checked_at=now) for pk in changed_ids),
                batch_size=1000,
                ignore_conflicts=True,
            )
        final_boxes_sync(dataset, image_ids)
    return report


def overlaps_scan(
    dataset: Dataset,
    *,
    chunk_images: int = 1000,
    max_chunks: int | None = None,
    now: datetime | None = None,
) -> ScanReport:
    """The catch-up: check every accepted box of the dataset still without an `OverlapCheck` (its check on
    commit failed or never ran: data loaded around the services, a relabel), one chunk of `chunk_images` images
    per transaction, then dismiss open pairs whose box left the accepted set and sync the final boxes wherever
    they disagree with the gate. Safe to run at any time; a killed run leaves what it checked checked, and the
    next run does the rest (`max_chunks` stops early on purpose)."""
    now = now or timezone.now()
    thresholds = overlap_thresholds(dataset.pk)
    items_before = ReviewItem.objects.filter(dataset=dataset).count()
    report = ScanReport(dataset_id=dataset.pk)
    cursor, chunks = 0, 0
    while max_chunks is None or chunks < max_chunks:
        image_ids = list(
            unchecked_boxes(dataset)
            .filter(image_id__gt=cursor)
            .order_by("image_id")
            .values_list("image_id", flat=True)
            .distinct()[:chunk_images]
        )
        if not image_ids:
            report.finished = True
            break
        report.add(overlaps_check_images(dataset, image_ids, thresholds=thresholds, now=now))
        cursor = image_ids[-1]
        chunks += 1
    if report.finished:
        with transaction.atomic():
            report.items_dismissed += _dismiss_orphans(ReviewItem.objects.filter(dataset=dataset))
        final_boxes_sync(dataset)  # any image where the gate and the final boxes disagree
        ScanState.objects.update_or_create(
            dataset=dataset,
            defaults={
                "last_finished_at": now,
                "last_boxes_checked": report.boxes_checked,
                "last_pairs_found": report.pairs_found,
            },
        )
    report.items_created = ReviewItem.objects.filter(dataset=dataset).count() - items_before
    return report


def overlaps_check_soon(dataset_id: int, image_ids: Iterable[int]) -> None:
    """Check the images' unchecked boxes once the current transaction commits (boxes were accepted,
    relabelled or restored in it): their finality waits for no schedule. Should that check fail, a catch-up
    scan is requested instead."""
    ids = sorted(set(image_ids))
    transaction.on_commit(lambda: _check_after_commit(dataset_id, ids))


def _check_after_commit(dataset_id: int, image_ids: list[int]) -> None:
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        return
    try:
        overlaps_check_images(dataset, image_ids)
    except Exception:  # the boxes stay unchecked (not final) until the catch-up checks them
        logger.exception("overlap check of images %s failed; a catch-up scan is requested", image_ids)
        overlaps_scan_request(dataset_id)


def boxes_recheck(*, dataset: Dataset, box_ids: Iterable[int]) -> None:
    """These boxes' class or state changed after their check (a relabel, an undo): forget their checks under
    their images' locks, so they are not final until examined again, and check them on commit."""
    ids = sorted(set(box_ids))
    if not ids:
        return
    with transaction.atomic():
        image_ids = sorted(set(Box.objects.filter(pk__in=ids).values_list("image_id", flat=True)))
        lock_images(image_ids)
        OverlapCheck.objects.filter(box_id__in=ids).delete()
    overlaps_check_soon(dataset.pk, image_ids)


def datasets_to_scan() -> list[int]:
    """Datasets with accepted boxes whose overlaps were not checked: what the scheduled catch-up scans."""
    return sorted(
        set(
            Box.objects.filter(state=BoxState.ACCEPTED)
            .filter(~Exists(OverlapCheck.objects.filter(box_id=OuterRef("pk"))))
            .order_by()
            .values_list("image__dataset_id", flat=True)
            .distinct()
        )
    )


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


def _load_accepted(image_ids: list[int]) -> BoxArrays:
    rows = list(
        Box.objects.filter(image_id__in=image_ids, state=BoxState.ACCEPTED)
        .order_by()
        .values_list("id", "image_id", "concept_id", "x1", "y1", "x2", "y2")
    )
    ids = np.array([r[:3] for r in rows], dtype=np.int64).reshape(-1, 3)
    coords = np.array([r[3:] for r in rows], dtype=np.float64).reshape(-1, 4)
    return BoxArrays(
        box_id=ids[:, 0],
        image_id=ids[:, 1],
        class_id=ids[:, 2],
        x1=coords[:, 0],
        y1=coords[:, 1],
        x2=coords[:, 2],
        y2=coords[:, 3],
    )


def _queue_pairs(dataset: Dataset, boxes: BoxArrays, pairs) -> set[tuple[int, int, str]]:
    kinds = np.where(
        pairs.kind == PairKind.DUPLICATE, ReviewKind.DUPLICATE.value, ReviewKind.CROSS_CLASS.value
    )
    image_of = dict(zip(boxes.box_id.tolist(), boxes.image_id.tolist(), strict=True))
    rows = list(
        zip(
            pairs.box_a.tolist(),
            pairs.box_b.tolist(),
            pairs.iou.tolist(),
            kinds.tolist(),
            pairs.confusable.tolist(),
            strict=True,
        )
    )
    # Pairs are queued once ever (`review_pair_once`): a rerun or a decided pair inserts nothing.
    ReviewItem.objects.bulk_create(
        (
            ReviewItem(
                kind=str(k),
                dataset=dataset,
                box_a_id=int(a),
                box_b_id=int(b),
                image_id=image_of[int(a)],
                iou=float(iou),
                confusable=bool(c),
                priority=pair_priority(float(iou)),
            )
            for a, b, iou, k, c in rows
        ),
        batch_size=1000,
        ignore_conflicts=True,
    )
    return {(int(a), int(b), str(k)) for a, b, _, k, _ in rows}


def _batched(values: Sequence, size: int = _IN_BATCH):
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _reopen_dismissed(found: set[tuple[int, int, str]]) -> int:
    """Pairs dismissed earlier (a box was removed, then restored) that qualify again go back to the queue."""
    if not found:
        return 0
    box_a_ids = sorted({a for a, _, _ in found})
    reopen = []
    for batch in _batched(box_a_ids):
        rows = ReviewItem.objects.filter(state=ItemState.DISMISSED, box_a_id__in=batch).values_list(
            "pk", "box_a_id", "box_b_id", "kind"
        )
        reopen += [pk for pk, a, b, k in rows if (a, b, k) in found]
    free = _skip_locked(ReviewItem.objects.filter(pk__in=reopen, state=ItemState.DISMISSED))
    return ReviewItem.objects.filter(pk__in=free).update(state=ItemState.OPEN)


def _dismiss_stale(changed_ids: list[int], found: set[tuple[int, int, str]]) -> int:
    """Open pair items of re-checked boxes that no longer qualify (relabelled, moved below a threshold)."""
    stale = []
    for batch in _batched(changed_ids):
        rows = (
            ReviewItem.objects.filter(state__in=OPEN_STATES)
            .exclude(kind=ReviewKind.AMBIGUOUS)
            .filter(Q(box_a_id__in=batch) | Q(box_b_id__in=batch))
            .values_list("pk", "box_a_id", "box_b_id", "kind")
        )
        stale += [pk for pk, a, b, k in rows if (a, b, k) not in found]
    return dismiss(_skip_locked(ReviewItem.objects.filter(pk__in=stale)))


def _dismiss_orphans(items) -> int:
    """Open pairs whose box left the accepted set (rejected, removed) since they were queued."""
    orphans = (
        items.filter(state__in=OPEN_STATES)
        .exclude(kind=ReviewKind.AMBIGUOUS)
        .filter(~Q(box_a__state=BoxState.ACCEPTED) | ~Q(box_b__state=BoxState.ACCEPTED))
    )
    return dismiss(_skip_locked(ReviewItem.objects.filter(pk__in=list(orphans.values_list("pk", flat=True)))))


def _skip_locked(items) -> list[int]:
    # A decision holding an item is never waited for: it locks the item before the images this check holds.
    return list(
        items.order_by("pk").select_for_update(skip_locked=True, no_key=True).values_list("pk", flat=True)
    )


def dismiss(item_ids: Iterable[int]) -> int:
    return ReviewItem.objects.filter(pk__in=list(item_ids), state__in=OPEN_STATES).update(
        state=ItemState.DISMISSED, leased_to=None, lease_expires_at=None
    )
