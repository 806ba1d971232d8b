"""A reviewer's verdict on a question the stopping rule sent to review (at its vote cap): recorded as the
question's decision and announced like any other, so every pipeline that asked it (verification labels,
Algorithm 1, the box pipeline) goes on exactly as after a decision of the rule (ILSVRC Appendix E).

The review app calls `question_review_decide`; consensus never imports review.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotation import counters, queue
from annotation.models import Task

from . import events, tally
from .models import (
    VERDICT_STATE,
    ConsensusSettings,
    Question,
    QuestionDecision,
    QuestionState,
    Verdict,
)


class NotInReview(Exception):
    """The question is not waiting for a reviewer (never sent, or decided already)."""


def question_review_decide(*, question_id: int, accept: bool, reviewer) -> QuestionDecision:
    """Decide a question in review as the reviewer says: state accepted or rejected, a decision row naming the
    reviewer, its task's result updated, and the `QuestionDecided` event. Locks the task, then the question
    (the engine's lock order). Raises `NotInReview` unless the question is in review."""
    with transaction.atomic(), counters.held():
        task_id = Question.objects.filter(pk=question_id).values_list("task_id", flat=True).first()
        task = Task.objects.select_for_update(no_key=True).get(pk=task_id) if task_id else None
        question = Question.objects.select_for_update(no_key=True).get(pk=question_id)
        if question.state != QuestionState.REVIEW:
            raise NotInReview(
                f"question {question.pk} is {question.get_state_display().lower()}, not waiting for a reviewer"
            )
        verdict = Verdict.ACCEPT if accept else Verdict.REJECT
        before = tally.seen(question)
        question.state = VERDICT_STATE[verdict]
        question.decided_at = timezone.now()
        question.save(update_fields=["state", "decided_at"])
        tally.question_changed(question, before)  # decided before and after; out of review
        row = QuestionDecision.objects.create(
            question=question,
            decision=verdict,
            p=question.p,
            yes_count=question.yes_count,
            no_count=question.no_count,
            estimator=ConsensusSettings.for_dataset(question.dataset_id).estimator,
            reviewer=reviewer,
        )
        if task is not None:
            task.result = {
                **(task.result or {}),
                "decision": verdict.value,
                "answer": accept,
                "reviewed": True,
            }
            queue.task_save(task, ["result"])
        events.announce(
            events.QuestionDecided(question=question, decision=row, previous_state=QuestionState.REVIEW)
        )
        return row
