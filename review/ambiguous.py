"""Ambiguous items from other pipelines: what the crowd could not settle (a question at its vote cap, a box job
over its round cap) queued for a reviewer, once per subject while open; the pipeline that sent it acts on the
decision (`review.resolvers`)."""

from __future__ import annotations

import json
from typing import Any

from django.db import IntegrityError, transaction

from annotation.models import Box, Dataset, Image

from .models import OPEN_STATES, ReviewItem, ReviewKind

# Items a pipeline waits on (a question in review holds up its labeling or box job) come before every pair,
# which only holds back the export: pairs range from 0 to 100.
PIPELINE_PRIORITY = 101


def ambiguous_enqueue(
    *,
    dataset: Dataset,
    subject: dict[str, Any],
    reason: str,
    box: Box | None = None,
    image: Image | None = None,
    priority: int = 0,
) -> ReviewItem:
    """Queue an item the crowd could not settle (a vote at its cap, a box job over its round cap) for a
    reviewer. `subject` names it, e.g. {"type": "consensus.question", "id": 12}; `image` is what the reviewer
    looks at (default: the box's image). The same subject is queued at most once while open, so calling again
    returns the open item."""
    if not isinstance(subject, dict) or not subject.get("type"):
        raise ValueError('subject must be a dict with a "type", e.g. {"type": "box_job", "id": 7}')
    key = json.dumps(subject, sort_keys=True, separators=(",", ":"))
    if len(key) > 200:
        raise ValueError("subject is too long: keep it to a type and an id or two")
    try:
        with transaction.atomic():
            return ReviewItem.objects.create(
                kind=ReviewKind.AMBIGUOUS,
                dataset=dataset,
                box_a=box,
                image_id=image.pk if image is not None else (box.image_id if box is not None else None),
                subject=subject,
                subject_key=key,
                reason=reason,
                priority=priority,
            )
    except IntegrityError:
        existing = ReviewItem.objects.filter(
            dataset=dataset, kind=ReviewKind.AMBIGUOUS, subject_key=key, state__in=OPEN_STATES
        ).first()
        if existing is None:
            raise
        return existing
