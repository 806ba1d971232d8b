"""The review gate's output as final labels: after a scan and after each decision, the boxes that
`selectors.finalized_boxes` lets through become the dataset's final boxes (`annotation.final_labels`); a box a
reviewer removed, relabelled or sent back to a recheck leaves them."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from annotation.final_labels import FinalBoxRow, final_boxes_set
from annotation.models import Box, BoxState, Dataset, FinalBox

from .selectors import finalized_boxes

CHUNK_IMAGES = 1000


def final_boxes_sync(dataset: Dataset, image_ids: Iterable[int] | None = None) -> int:
    """Bring the final boxes of `image_ids` (every image with boxes when None) in line with the review gate,
    one chunk of images per transaction. Returns the number of final-box rows changed."""
    if image_ids is None:
        accepted = Box.objects.filter(image__dataset=dataset, state=BoxState.ACCEPTED).values_list(
            "image_id", flat=True
        )
        final = FinalBox.objects.filter(dataset=dataset).values_list("image_id", flat=True)
        ids = sorted(set(accepted.distinct()) | set(final.distinct()))
    else:
        ids = sorted(set(image_ids))
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
