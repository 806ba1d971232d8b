"""The review gate's output as final labels: after an overlap check and after each decision, the boxes that
`selectors.finalized_boxes` lets through become the dataset's final boxes (`annotation.final_labels`); a box a
reviewer removed, relabelled or sent back to a recheck leaves them."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.db.models import Exists, OuterRef

from annotation.final_labels import FinalBoxRow, final_boxes_set
from annotation.models import Dataset, FinalBox

from .selectors import finalized_boxes

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
    through (removed, rejected, relabelled, or with a review item open again). Two indexed queries, so a scan
    that changed little syncs little."""
    gate = finalized_boxes(dataset)
    missing = gate.filter(~Exists(FinalBox.objects.filter(box_id=OuterRef("pk")))).values_list(
        "image_id", flat=True
    )
    stale = (
        FinalBox.objects.filter(dataset=dataset)
        .filter(~Exists(gate.filter(pk=OuterRef("box_id"), concept_id=OuterRef("concept_id"))))
        .values_list("image_id", flat=True)
    )
    return sorted(set(missing.distinct()) | set(stale.distinct()))
