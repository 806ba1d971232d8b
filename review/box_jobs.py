"""Connects the box pipeline to review: a box job sent to review (a cap reached, an undecidable question)
becomes an ambiguous review item about that job, and about its pending box when it has one."""

from __future__ import annotations

from annotation import boxes
from annotation.models import Box, BoxJob

SUBJECT_TYPE = "box_job"


def box_job_to_review(job: BoxJob, reason: str, detail: str) -> None:
    from .services import ambiguous_enqueue

    pending = boxes.job_state(job).pending_box_id
    ambiguous_enqueue(
        dataset=job.dataset,
        subject={"type": SUBJECT_TYPE, "id": job.pk},
        reason=f"box job {reason}: {detail}",
        box=Box.objects.filter(pk=pending).first() if pending is not None else None,
    )


def connect() -> None:
    boxes.review_hook_register(box_job_to_review)
