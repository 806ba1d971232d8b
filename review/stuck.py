"""The sweep that leaves no dead end: questions nobody left can answer are settled or sent to review, and box jobs
awaiting a verification that no question asks any more go to review (`consensus.starved`, `boxes.stranded`), and every question waiting in review and every box job in review has an open review
item, whatever happened before (data from before the pipelines were connected, an item dismissed by mistake).
Run on a schedule (`review.tasks.stuck_enqueue`) and by `manage.py review_stuck`."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from boxes import stranded
from consensus import starved
from consensus.models import QuestionState

from . import box_jobs, questions
from .models import OPEN_STATES, ItemState, ReviewItem, ReviewKind


@dataclass
class StuckReport:
    starved_settled: dict[str, int] = field(default_factory=dict)  # decision -> starved questions settled
    box_jobs_stranded: int = 0  # box jobs awaiting a verification no question asks any more, sent to review
    table_waits_ended: int = 0  # questions held for a calibration table that cannot come, served or decided
    questions_queued: int = 0
    box_jobs_queued: int = 0
    items_dismissed: int = 0


def stuck_enqueue(*, dataset_id: int | None = None, starved_after: float | None = None) -> StuckReport:
    """Settle starved questions (idle `starved_after` seconds, the setting when None; those sent to review get
    their item through the usual event), send box jobs whose verification no question asks any more to review
    (`boxes.stranded.box_jobs_stranded`), then queue every question and box job in review that has no open
    item, and dismiss open question items whose question left review without a reviewer (its votes were
    voided and it reopened)."""
    report = StuckReport()
    settled = starved.starved_settle(dataset_id=dataset_id, idle_seconds=starved_after)
    report.starved_settled, report.table_waits_ended = settled.settled, settled.table_waits_ended
    report.box_jobs_stranded = stranded.box_jobs_settle_stranded(
        dataset_id=dataset_id, idle_seconds=starved_after
    )
    for question in questions.questions_in_review_without_item().select_related("dataset", "image", "box"):
        with transaction.atomic():
            questions.question_enqueue(question)
        report.questions_queued += 1
    for job in box_jobs.jobs_in_review_without_item():
        with transaction.atomic():
            box_jobs.box_job_to_review(job, job.review_reason or "review", "queued by the review sweep")
        report.box_jobs_queued += 1
    from consensus.models import Question

    open_items = (
        ReviewItem.objects.filter(kind=ReviewKind.AMBIGUOUS, subject__type=questions.SUBJECT_TYPE)
        .filter(Q(state=ItemState.OPEN) | Q(state=ItemState.LEASED, lease_expires_at__lt=timezone.now()))
        .values_list("pk", "subject")
    )
    by_question = {int(subject["id"]): pk for pk, subject in open_items}
    gone = Question.objects.filter(pk__in=list(by_question)).exclude(state=QuestionState.REVIEW)
    stale = [by_question[pk] for pk in gone.values_list("pk", flat=True)]
    report.items_dismissed = ReviewItem.objects.filter(pk__in=stale, state__in=OPEN_STATES).update(
        state=ItemState.DISMISSED, leased_to=None, lease_expires_at=None
    )
    return report
