"""The review gate's output as final labels: after an overlap check and after each decision, the boxes that
`selectors.finalized_boxes` lets through become the dataset's final boxes (`annotation.final_labels`); a box a
reviewer removed, relabelled or sent back to a recheck leaves them."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.db.models import Exists, OuterRef

from annotation.final_labels import FinalBoxRow, final_boxes_set
from annotation.models import Box, BoxState, Dataset, FinalBox

from .models import OverlapCheck
from .selectors import finalized_boxes, open_review_box_ids

CHUNK_IMAGES = 1000


def final_boxes_sync(dataset: Dataset, image_ids: Iterable[int] | None = None) -> int:
    """Bring the final boxes of `image_ids` (when None: every image where the gate and the final boxes
    disagree) in line with the review gate, one chunk of images per transaction. Returns the number of
    final-box rows changed."""
    ids = sorted(set(image_ids)) if image_ids is not None else images_out_of_step(dataset)
    changed = 0
    for start in range(0, len(ids), CHUNK_IMAGES):
        chunk = ids[start : start + CHUNK_IMAGES]
        with transaction.atomic():
            rows = (
                finalized_boxes(dataset)
                .filter(image_id__in=chunk)
                .order_by("id")
                .values_list("id", "image_id", "concept_id", "x1", "y1", "x2", "y2")
            )
            changed += final_boxes_set(
                dataset_id=dataset.pk, boxes=[FinalBoxRow(*row) for row in rows], image_ids=chunk
            )
    return changed


def images_out_of_step(dataset: Dataset) -> list[int]:
    """Images with a box the gate lets through but no final row, or a final row the gate no longer lets
    through: its box removed, rejected or relabelled, its overlaps not examined any more, or a review item
    about it open again.

    Each part is one query the database runs as a join over the dataset's boxes and final rows (a hash
    anti-join, or from the few open review items), so a scan that changed little syncs little and costs about
    three scans of the box table. Comparing every final row with the gate's whole definition in one nested
    query took 11.3 s at 3,000,000 boxes, these 2.6 s (the same rows found). A final row's box is of its
    dataset by construction (the row is written from the box's image's dataset), so that is not asked again."""
    boxes_without_row = Box.objects.filter(image__dataset=dataset, state=BoxState.ACCEPTED).filter(
        ~Exists(FinalBox.objects.filter(box_id=OuterRef("pk")))
    )
    missing = finalized_boxes(dataset).filter(pk__in=boxes_without_row.values("pk"))
    rows = FinalBox.objects.filter(dataset=dataset)
    accepted_as_final = Box.objects.filter(
        pk=OuterRef("box_id"), concept_id=OuterRef("concept_id"), state=BoxState.ACCEPTED
    )
    stale = [
        rows.filter(~Exists(accepted_as_final)),
        rows.filter(~Exists(OverlapCheck.objects.filter(box_id=OuterRef("box_id")))),
        *(rows.filter(box_id__in=ids) for ids in open_review_box_ids()),
    ]
    images = set(missing.values_list("image_id", flat=True).distinct())
    for part in stale:
        images |= set(part.values_list("image_id", flat=True).distinct())
    return sorted(images)
