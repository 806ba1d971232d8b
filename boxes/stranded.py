"""Box jobs nobody's question moves on: a job awaiting a verification (QUALITY of its pending box, or COVERAGE)
that no consensus question asks any more goes to review (`services.box_job_unanswerable`), as when its question
reaches the vote cap. The stuck sweep (`review.stuck`) runs it after settling the starved questions
(`consensus.starved`)."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from annotation.models import BoxJob, BoxJobStatus, Task, TaskState
from consensus.models import Question, QuestionKind, QuestionState
from consensus.starved import starved_after

from . import services

# Box jobs waiting for a verification question's decision.
VERIFYING = (BoxJobStatus.AWAITING_QUALITY, BoxJobStatus.AWAITING_COVERAGE)


def box_jobs_stranded(*, dataset_id: int | None = None, idle_seconds: float | None = None) -> list[int]:
    """Ids of the box jobs awaiting a verification (QUALITY of their pending box, or COVERAGE) that no question
    asks any more, untouched for `idle_seconds` (the setting when None): none of their stage is open with its
    task in the queue or leased, nor waiting for its table. A live question nobody can take is the question
    sweep's (settling it moves its job on); a job whose question left without moving it (its verdict came when
    the job could not take it, or it was never served) would otherwise wait for good, awaiting coverage with
    every worker told there is nothing to do."""
    idle = starved_after() if idle_seconds is None else timedelta(seconds=idle_seconds)
    jobs = BoxJob.objects.filter(status__in=VERIFYING, updated_at__lte=timezone.now() - idle)
    if dataset_id is not None:
        jobs = jobs.filter(dataset_id=dataset_id)
    live_tasks = Task.objects.exclude(state__in=[TaskState.DONE, TaskState.CANCELLED])
    live = Question.objects.filter(
        Q(state=QuestionState.OPEN, task__in=live_tasks) | Q(state=QuestionState.WAITING)
    )
    stranded = []
    for job in jobs.order_by("id"):
        if job.status == BoxJobStatus.AWAITING_QUALITY:
            asks = live.filter(kind=QuestionKind.BOX_QUALITY, box_id=services.job_state(job).pending_box_id)
        else:
            asks = live.filter(
                kind=QuestionKind.BOX_COVERAGE,
                dataset_id=job.dataset_id,
                image_id=job.image_id,
                concept_id=job.concept_id,
                box__isnull=True,
            )
        if not asks.exists():
            stranded.append(job.pk)
    return stranded


def box_jobs_settle_stranded(*, dataset_id: int | None = None, idle_seconds: float | None = None) -> int:
    """Send every stranded box job to review (`services.box_job_unanswerable`), one transaction each;
    returns how many went."""
    found = box_jobs_stranded(dataset_id=dataset_id, idle_seconds=idle_seconds)
    return sum(services.box_job_unanswerable(job_id=pk) for pk in found)
