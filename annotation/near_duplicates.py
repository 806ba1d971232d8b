"""Near-duplicate flags of a dataset's images (`Image.near_duplicate_of`: set at ingestion by perceptual hash,
kept flat by `candidates.dedup`, followed by splits): the lock an organizer's verdict on a flag takes, and the
clearing of a flag the organizer dismissed."""

from __future__ import annotations

from .models import Dataset, Image


def near_duplicate_flag_lock(*, dataset: Dataset, image_id: int) -> Image:
    """The dataset's image `image_id` while it carries a flag, locked until the caller's transaction ends
    (call inside `transaction.atomic`); `Image.DoesNotExist` when the dataset has no such image or its image
    carries no flag. FOR NO KEY UPDATE: tasks, boxes and labels reference images (docs/architecture.md,
    *Lock order*)."""
    return Image.objects.select_for_update(no_key=True, of=("self",)).get(
        dataset=dataset, near_duplicate_of__isnull=False, pk=image_id
    )


def near_duplicate_flag_clear(image: Image) -> None:
    """The image is no near-duplicate (an organizer dismissed its flag): splits no longer keep it with the image
    it was flagged against. The caller holds the image's lock (`near_duplicate_flag_lock`)."""
    Image.objects.filter(pk=image.pk).update(near_duplicate_of=None)
    image.near_duplicate_of = None
