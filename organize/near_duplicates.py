"""Organizers' verdicts on near-duplicate flags: confirm (the image stays with its original in every split) or
dismiss (the flag is cleared: the two are distinct images). A verdict is an append-only `NearDuplicateReview`,
one per (image, original), written with its audit entry in the transaction that holds the image's lock
(`annotation.near_duplicates`)."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from annotation.audit import audit_record
from annotation.models import Dataset
from annotation.near_duplicates import near_duplicate_flag_clear, near_duplicate_flag_lock

from .models import NearDuplicateDecision, NearDuplicateReview


class FlagDecided(Exception):
    """The flag was decided already (confirmed: a dismissed flag is gone); the API answers 409."""


def near_duplicate_decide(*, dataset: Dataset, image_id: int, decision: str, actor) -> NearDuplicateReview:
    """Record `decision` (a `NearDuplicateDecision`) on the flag of the dataset's image `image_id`.
    `Image.DoesNotExist` when the dataset has no such image or it carries no flag; `FlagDecided` when the flag
    has a verdict already (the unique constraint decides, so two concurrent verdicts record one)."""
    try:
        with transaction.atomic():
            image = near_duplicate_flag_lock(dataset=dataset, image_id=image_id)
            review = NearDuplicateReview.objects.create(
                image=image, original_id=image.near_duplicate_of_id, decision=decision, actor=actor
            )
            if decision == NearDuplicateDecision.DISMISS:
                near_duplicate_flag_clear(image)
            audit_record(
                dataset=dataset,
                actor=actor,
                action=f"near_duplicate.{decision}",
                parameters={"image": image.pk, "original": review.original_id},
            )
    except IntegrityError:
        raise FlagDecided(f"image {image_id}'s flag was confirmed already") from None
    return review
