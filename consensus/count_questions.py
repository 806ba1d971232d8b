"""Consensus questions that carry their own count rule (a fixed majority, first-to-k or a margin of
`consensus.stopping`): the plain vote, the fixed box questions and multi-label's `vote` engine create theirs here,
and a task of those kinds queued before its kind's tasks were questions is adopted on its next submit. They are
voted on and decided like every question, by `engine.vote_apply` (docs/consensus.md, *Count rules*).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from annotation import counters
from annotation.models import Assignment, AssignmentState, Dataset, Task
from hierarchy.models import Concept

from . import tally
from .creation import Target, questions_serve
from .engine import QuestionClosed
from .models import ConsensusSettings, Question, QuestionKind, QuestionRole, QuestionState, Vote
from .stopping import policy_of
from .wording import question_text


def count_questions_create(
    *,
    dataset: Dataset,
    kind: str,
    concept: Concept,
    targets: Sequence[Target],
    rule: dict[str, Any],
    task_kind: str,
    text: str | None = None,
    priority: int = 0,
) -> list[Question]:
    """One question per target carrying `rule` (`stopping.rule_of`), each served at once as a `task_kind` task
    with its target's `payload` (or the wording), up to the rule's cap: no calibration role, never waiting."""
    if kind not in QuestionKind.values:
        raise ValueError(f"unknown question kind {kind!r}; known: {', '.join(QuestionKind.values)}")
    policy_of(rule)  # a bad spec fails here, naming what is wrong
    settings = ConsensusSettings.for_dataset(dataset.pk)
    text = text or question_text(kind, concept, dataset.pk)
    with transaction.atomic(), counters.held():
        questions = [
            Question(
                kind=kind,
                dataset=dataset,
                concept=concept,
                image=target.image,
                box=target.box,
                subject=target.subject or {},
                round=target.round,
                rule=rule,
                role=QuestionRole.PRODUCTION,
                state=QuestionState.OPEN,
                min_votes=1,
            )
            for target in targets
        ]
        Question.objects.bulk_create(questions, batch_size=500)
        tally.questions_counted(questions)
        questions_serve(questions, text, settings, priority, task_kind, [t.payload for t in targets])
    return questions


def question_adopt(
    *,
    task: Task,
    current,
    kind: str,
    rule: dict[str, Any],
    subject: dict[str, Any] | None = None,
    round: int = 0,
) -> Question:
    """The question of an open task of a count-rule kind queued before its kinds were consensus questions (or
    created bare, as the queue's own tests do): created now, linked to the task, with the task's submitted
    answers but the `current` assignment's (which the caller votes next) as its votes. Runs in the submit's transaction, the task row locked, so it is created once."""
    if task.concept_id is None:
        raise QuestionClosed("this task names no concept, so it asks nothing the engine can decide")
    policy_of(rule)
    question = Question.objects.create(
        kind=kind,
        dataset_id=task.dataset_id,
        concept_id=task.concept_id,
        image_id=task.image_id,
        box_id=task.box_id,
        subject=subject or {},
        round=round,
        rule=rule,
        task=task,
    )
    tally.questions_counted([question])
    earlier = list(
        Assignment.objects.filter(task=task, state=AssignmentState.SUBMITTED, vote__isnull=True)
        .exclude(pk=current.pk)
        .order_by("submitted_at", "id")
        .values_list("pk", "worker_id", "answer")
    )
    votes = [
        Vote(
            question=question,
            worker_id=worker_id,
            answer=bool((answer or {}).get("answer")),
            assignment_id=pk,
        )
        for pk, worker_id, answer in earlier
    ]
    Vote.objects.bulk_create(votes)
    question.yes_count = sum(1 for v in votes if v.answer)
    question.no_count = len(votes) - question.yes_count
    question.save(update_fields=["yes_count", "no_count"])
    return question
