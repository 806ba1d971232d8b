"""Voiding votes: a higher app (gold) that finds a worker unreliable voids their votes; the questions they touched
are recounted without them, open ones keep collecting votes, and decided ones are re-checked by the stopping
rule and reopened when the remaining votes no longer decide them. A worker taking back their own vote within the
undo window (`vote_withdraw`) is the same repair for one open question.

Locks: every touched task (by id), then every touched question (by id), the queue's task-then-question order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, Q

from annotation import counters, kinds, queue
from annotation.models import Assignment, Task, TaskState

from . import events, tally
from .engine import (
    calibration_rebuild_enqueue,
    decision_for,
    question_finalize,
    task_change_apply,
    verdict_for,
)
from .estimates import EVIDENCE_KINDS
from .final_labels import question_final_label
from .models import (
    DECIDED_STATES,
    VERDICT_STATE,
    ConsensusSettings,
    Estimator,
    Question,
    QuestionDecision,
    QuestionRole,
    QuestionState,
    Verdict,
    Vote,
    VoteVoid,
)
from .stopping import Decision


@dataclass
class VoidReport:
    voided: int = 0
    recounted: list[int] = field(default_factory=list)  # open questions recounted (still open)
    decided_now: list[int] = field(default_factory=list)  # open questions the remaining votes decide
    confirmed: list[int] = field(default_factory=list)  # decided questions whose verdict stands
    changed: list[int] = field(default_factory=list)  # decided questions that got another verdict
    reopened: list[int] = field(default_factory=list)  # decided questions back to collecting votes


def votes_void(*, votes: Iterable[int], reason: str) -> VoidReport:
    """Void these votes (ids; already-void ones are skipped) and repair every question they counted in."""
    report = VoidReport()
    with transaction.atomic(), counters.held():
        fresh = list(
            Vote.objects.filter(pk__in=list(votes), void__isnull=True).values_list("pk", "question_id")
        )
        if not fresh:
            return report
        question_ids = sorted({qid for _, qid in fresh})
        task_ids = sorted(
            t for t in Question.objects.filter(pk__in=question_ids).values_list("task_id", flat=True) if t
        )
        tasks = queue.tasks_lock(task_ids)
        questions = list(
            Question.objects.select_for_update(no_key=True).filter(pk__in=question_ids).order_by("id")
        )
        VoteVoid.objects.bulk_create([VoteVoid(vote_id=pk, reason=reason[:200]) for pk, _ in fresh])
        report.voided = len(fresh)
        counts = {
            row["question_id"]: row
            for row in Vote.objects.filter(question_id__in=question_ids, void__isnull=True)
            .values("question_id")
            .annotate(yes=Count("id", filter=Q(answer=True)), no=Count("id", filter=Q(answer=False)))
        }
        for question in questions:
            row = counts.get(question.pk, {"yes": 0, "no": 0})
            before = tally.seen(question)
            question.yes_count, question.no_count = row["yes"], row["no"]
            question.save(update_fields=["yes_count", "no_count"])
            tally.question_changed(question, before)  # a decided question's votes count for the quality page
            task = tasks.get(question.task_id) if question.task_id else None
            _repair(question, task, report)
            if task is not None:
                queue.task_save(task, ["state", "result", "lease_expires_at"])
        _tables_rebuild_after(questions)
    return report


def _tables_rebuild_after(questions: list[Question]) -> None:
    """The evidence tables of the (kind, concept)s these voided votes counted in are built again after commit
    (consensus/rebuild.py): without the voided votes, under a fit that no longer sees them and the standing it
    gives every worker. One rebuild per (kind, concept), whatever the number of votes voided."""
    pairs = {
        (q.kind, q.concept_id): q.dataset_id for q in questions if not q.rule and q.kind in EVIDENCE_KINDS
    }
    for (kind, concept_id), dataset_id in sorted(pairs.items()):
        calibration_rebuild_enqueue(kind, concept_id, dataset_id)


WITHDRAWN_REASON = "taken back by its worker"


def vote_withdraw(*, assignment: Assignment) -> Question:
    """The queue's undo (task row locked): the vote this assignment cast stops counting, as if never cast.

    Refused (AnswerStands) once the question is decided or paused for its calibration table, or when the
    remaining votes would decide it now (a new table since): an undo never settles a question. The vote row
    stays, marked withdrawn and voided, so the worker's new answer is a new vote and every count skips it."""
    task = assignment.task
    question = Question.objects.select_for_update(no_key=True).get(task=task)
    if question.state != QuestionState.OPEN or task.state == TaskState.DONE:
        raise kinds.AnswerStands("its question has been decided, so this answer stands")
    vote = Vote.objects.select_related("void").get(assignment=assignment)
    Vote.objects.filter(pk=vote.pk).update(withdrawn=True)
    if getattr(vote, "void", None) is None:  # a vote voided meanwhile already counts for nothing
        VoteVoid.objects.create(vote=vote, reason=WITHDRAWN_REASON)
        if vote.answer:
            question.yes_count -= 1
        else:
            question.no_count -= 1
        question.save(update_fields=["yes_count", "no_count"])
    report = VoidReport()
    _repair(question, task, report)
    if report.decided_now:
        raise kinds.AnswerStands("the other answers now decide its question, so this answer stands")
    return question


def _repair(question: Question, task: Task | None, report: VoidReport) -> None:
    settings = ConsensusSettings.for_dataset(question.dataset_id)
    enough = question.n_votes >= question.min_votes
    if question.state == QuestionState.OPEN:
        paused = task is not None and task.state == TaskState.DONE
        if paused and not enough:
            task.state, task.result = TaskState.OPEN, None  # a calibration question short of its votes again
        if not enough or question.role == QuestionRole.CALIBRATION:
            report.recounted.append(question.pk)
            return
        decision, estimate = decision_for(question, settings)
        if decision == Decision.ASK_MORE:
            question.p = estimate.p
            question.save(update_fields=["p"])
            report.recounted.append(question.pk)
        else:
            _close(question, task, decision, estimate)
            report.decided_now.append(question.pk)
        return
    if question.state not in DECIDED_STATES:
        return
    current = {state: verdict for verdict, state in VERDICT_STATE.items()}[QuestionState(question.state)]
    if enough:
        decision, estimate = decision_for(question, settings)
    else:
        decision, estimate = Decision.ASK_MORE, None
    if decision != Decision.ASK_MORE:
        if verdict_for(question, decision) == current:
            report.confirmed.append(question.pk)
        else:
            _close(question, task, decision, estimate)
            report.changed.append(question.pk)
        return
    if _acted_on(question):
        # A box job moved past this coverage round: reopening it would leave an undecided round beside the one
        # the job asks next, which the one-undecided-coverage-question constraint refuses. Its verdict stands,
        # recounted.
        report.recounted.append(question.pk)
        return
    # The remaining votes no longer decide it: back to the queue, with an append-only row saying so.
    before = tally.seen(question)
    previous_state = question.state
    question.state = QuestionState.OPEN
    question.p = estimate.p if estimate is not None else None
    question.decided_at = None
    question.save(update_fields=["state", "p", "decided_at"])
    tally.question_changed(question, before)
    QuestionDecision.objects.create(
        question=question,
        decision=Verdict.REOPENED,
        p=question.p,
        yes_count=question.yes_count,
        no_count=question.no_count,
        estimator=Estimator.COUNT if question.rule else settings.estimator,
        table=estimate.table if estimate is not None else None,
    )
    if task is not None:
        task.state, task.result, task.lease_expires_at = TaskState.OPEN, None, None
    question_final_label(question)  # a reopened question no longer decides its image's label
    events.announce_reopened(
        events.QuestionReopened(question=question, previous_state=previous_state)
    )  # e.g. Algorithm 1 rewinds
    report.reopened.append(question.pk)


def _close(question: Question, task: Task | None, decision: Decision, estimate) -> None:
    """Close the question with its verdict and its task (written by the caller with the task's other fields)."""
    change = question_finalize(question, decision, estimate)
    if task is not None:
        task_change_apply(task, change)


def _acted_on(question: Question) -> bool:
    """Whether the box job of this coverage round (round > 0) has acted on its verdict for good: a "no" (or a
    review) sent the job to draw again or to a person, and the job's next coverage round asks afresh; a later
    round exists. Only a "yes" that finished the job and is still the last round reopens: the job then takes
    the revised verdict (a spammer's "every instance is boxed" voided away draws again)."""
    if question.round == 0:
        return False
    return question.state != QuestionState.ACCEPTED or round_superseded(question)


def round_superseded(question: Question) -> bool:
    """Whether a later round of this question (a box job's coverage round: `round` > 0) exists for the same
    dataset, kind, image and concept."""
    return (
        question.round > 0
        and Question.objects.filter(
            dataset_id=question.dataset_id,
            kind=question.kind,
            concept_id=question.concept_id,
            image_id=question.image_id,
            box__isnull=True,
            round__gt=question.round,
        ).exists()
    )
