"""Connects the box pipeline to review: a box job sent to review (a cap reached, coverage with no box, an
undecidable question of a backend without its own review path) becomes an ambiguous item showing the job's
image and boxes; the reviewer's accept / redraw / close goes back to the pipeline (`annotation.pipeline.
review_decided`). A job in review because a consensus question was undecidable is carried by that question's
item instead (review.questions): its verdict resumes the job as the question's decision, one item, one path.
Accepted boxes have their overlaps checked once their transaction commits (review.scan).

A job may also end with the reviewer's "absent": the class is not in the image at all. That is how a wrong
"present" is caught that the crowd agreed on (a confusable sibling: honest workers say "bicycle" for a motorbike,
then no drawer can box a bicycle and coverage says "all boxed" with none): the job closes and the reviewer's
verdict becomes the pair's final label (`annotation.final_evidence.REVIEW`), above every crowd verdict. Only a
job without accepted boxes can be absent: boxes a quality check accepted are judged on their own items."""

from __future__ import annotations

from typing import Any

from annotation import pipeline
from annotation.final_evidence import REVIEW
from annotation.final_labels import LabelVerdict, final_labels_record
from annotation.models import Box, BoxJob, BoxJobStatus
from boxes import services as boxes
from consensus.models import Question, QuestionKind, QuestionState

from . import resolvers
from .models import Decision

SUBJECT_TYPE = "box_job"
_UNDECIDABLE = {
    pipeline.ReviewReason.QUALITY_UNDECIDABLE.value: QuestionKind.BOX_QUALITY,
    pipeline.ReviewReason.COVERAGE_UNDECIDABLE.value: QuestionKind.BOX_COVERAGE,
}
_OUTCOMES = {
    Decision.ACCEPT: pipeline.ReviewOutcome.ACCEPT,
    Decision.REDRAW: pipeline.ReviewOutcome.REDRAW,
    Decision.CLOSE: pipeline.ReviewOutcome.CLOSE,
    Decision.ABSENT: pipeline.ReviewOutcome.CLOSE,  # closed, and the final label says absent
}


def _question_carries(job: BoxJob, reason: str) -> bool:
    """Whether a consensus question in review stands for this job's review (it gets its own item)."""
    kind = _UNDECIDABLE.get(reason)
    if kind is None:
        return False
    asked = Question.objects.filter(dataset_id=job.dataset_id, kind=kind, state=QuestionState.REVIEW)
    if kind == QuestionKind.BOX_QUALITY:
        pending = boxes.job_state(job).pending_box_id
        return pending is not None and asked.filter(box_id=pending).exists()
    return asked.filter(image_id=job.image_id, concept_id=job.concept_id, box__isnull=True).exists()


def box_job_to_review(job: BoxJob, reason: str, detail: str) -> None:
    from .ambiguous import PIPELINE_PRIORITY, ambiguous_enqueue

    if _question_carries(job, reason):
        return
    pending = boxes.job_state(job).pending_box_id
    ambiguous_enqueue(
        dataset=job.dataset,
        subject={"type": SUBJECT_TYPE, "id": job.pk},
        reason=f"box job {reason}: {detail}",
        box=Box.objects.filter(pk=pending).first() if pending is not None else None,
        image=job.image,
        priority=PIPELINE_PRIORITY,
    )


def boxes_accepted(job: BoxJob, box_ids: list[int]) -> None:
    from .scan import overlaps_check_soon

    overlaps_check_soon(job.dataset_id, [job.image_id])


def _apply(item, row) -> None:
    from .errors import InvalidDecision, SubjectGone

    job_id = int(item.subject["id"])
    if row.decision == Decision.ABSENT:
        job = BoxJob.objects.get(pk=job_id)
        if boxes.job_state(job).accepted:
            raise InvalidDecision(
                "this job has accepted boxes, so the class was seen: close it, or ask for more boxes; a wrong "
                "accepted box is judged on its own"
            )
    try:
        boxes.box_job_review_resolve(job_id=job_id, outcome=_OUTCOMES[row.decision])
    except pipeline.TransitionError:
        raise SubjectGone(
            "this box job is no longer in review: the item is dismissed, take the next one"
        ) from None
    if row.decision == Decision.ABSENT:
        final_labels_record(
            dataset_id=item.dataset_id,
            source=REVIEW,
            verdicts=[
                LabelVerdict(
                    image_id=job.image_id,
                    concept_id=job.concept_id,
                    present=False,
                    ref={"review_item": item.pk, "review_decision": row.pk},
                )
            ],
        )


def _describe(item) -> dict[str, Any]:
    job = BoxJob.objects.select_related("concept").filter(pk=item.subject.get("id")).first()
    if job is None:
        return {"kind": SUBJECT_TYPE, "question": "", "concept": None, "votes": None, "boxes": []}
    state = boxes.job_state(job)
    shown = [*state.accepted_ids, *([state.pending_box_id] if state.pending_box_id is not None else [])]
    name = job.concept.name
    return {
        "kind": SUBJECT_TYPE,
        "question": f"Is every {name} in this image inside exactly one right box? ({state.rounds} draw rounds "
        f"used, {len(state.accepted)} boxes accepted, {state.boxes_rejected} rejected)",
        "concept": job.concept,
        "votes": None,
        "boxes": list(Box.objects.filter(pk__in=shown).select_related("concept").order_by("pk")),
    }


RESOLVER = resolvers.Resolver(
    apply=_apply,
    undo_refused="this box job went back to the pipeline, which has acted on it; it cannot be undone",
    decisions=(Decision.ACCEPT, Decision.REDRAW, Decision.CLOSE, Decision.ABSENT),
    describe=_describe,
    owns_box=True,
)


def jobs_in_review_without_item():
    """Box jobs in review that no open item carries, nor a consensus question in review: the sweep's work."""
    from .models import OPEN_STATES, ReviewItem, ReviewKind

    open_ids = {
        int(subject["id"])
        for subject in ReviewItem.objects.filter(
            kind=ReviewKind.AMBIGUOUS, state__in=OPEN_STATES, subject__type=SUBJECT_TYPE
        ).values_list("subject", flat=True)
    }
    jobs = BoxJob.objects.filter(status=BoxJobStatus.REVIEW).exclude(pk__in=open_ids).order_by("id")
    return [job for job in jobs if not _question_carries(job, job.review_reason)]


def connect() -> None:
    boxes.review_hook_register(box_job_to_review)
    boxes.accepted_hook_register(boxes_accepted)
    resolvers.register(SUBJECT_TYPE, RESOLVER)
