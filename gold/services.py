"""State changes of gold: check a gold answer and update the worker's score in the same transaction,
qualify, score drawers from the quality verdicts on their boxes, block a worker from a whole dataset and repair
(void their votes through consensus), and pay recommendations."""

from __future__ import annotations

from dataclasses import asdict
from datetime import timedelta
from typing import Any

from celery import current_app
from django.db import transaction
from django.utils import timezone

from annotation import kinds, queue
from annotation.models import Assignment, AssignmentState, Box
from consensus.models import Vote
from consensus.voiding import votes_void
from outbox.services import message_enqueue

from . import events, scoring
from .models import (
    Block,
    BlockAction,
    DrawVerdict,
    GoldAnswer,
    GoldItem,
    GoldServing,
    GoldSettings,
    PaymentDecision,
    Purpose,
    Recommendation,
    ScoreKind,
    WorkerScore,
)
from .serving import GOLD_POOL, lease_purpose

SCORE_TASK = "gold.tasks.gold_answer_score"


def gold_submit_intercept(assignment: Assignment) -> queue.TaskChange | None:
    """Queue submit interceptor: the answer to a gold pool task is checked by gold and never becomes a consensus
    vote; the task stays in the pool for other workers (the queue never gives it to this one again). Runs inside
    the submit transaction with the task row locked. Any other task costs no query.

    A qualification answer is scored here (its feedback is in the response; those items are announced). An
    embedded item's answer is scored after the response by a background task (`gold_answer_score`, through
    the outbox), so a submit takes no longer for gold than for a real question: all the submit does is record
    the message (issue 35). Without a broker every background task runs in-process, and so does this one."""
    task = assignment.task
    if task.pool != GOLD_POOL:
        return None
    purpose, attempt = lease_purpose(assignment.lease_note) or (Purpose.EMBEDDED, None)
    if purpose == Purpose.EMBEDDED and not current_app.conf.task_always_eager:
        message_enqueue(SCORE_TASK, (assignment.pk,), dataset_id=task.dataset_id)
        return queue.TaskChange()
    _answer_score(assignment, purpose, attempt)
    return queue.TaskChange()


def gold_answer_score(assignment_id: int) -> None:
    """Score an embedded gold answer after its submit (the outbox's background task): the worker's first answer
    to the item, once (a run again, or for an answer given again after an undo, changes nothing)."""
    assignment = Assignment.objects.select_related("task", "worker").get(pk=assignment_id)
    first = (
        Assignment.objects.select_related("task", "worker")
        .filter(task_id=assignment.task_id, worker_id=assignment.worker_id, submitted_at__isnull=False)
        .order_by("submitted_at", "id")
        .first()
    )
    purpose, attempt = lease_purpose(first.lease_note) or (Purpose.EMBEDDED, None)
    with transaction.atomic():
        _answer_score(first, purpose, attempt)


def _answer_score(assignment: Assignment, purpose: str, attempt: int | None) -> None:
    """Record the worker's answer to the item and update their score, unless they answered it before (an
    answer given again after an undo: the first one is the one scored)."""
    task = assignment.task
    item = GoldItem.objects.get(task_id=task.pk)
    serving, created = GoldServing.objects.get_or_create(
        item=item,
        worker=assignment.worker,
        defaults={"task": task, "assignment": assignment, "purpose": purpose, "attempt": attempt},
    )
    if not created:
        return
    GoldAnswer.objects.create(
        serving=serving,
        assignment=assignment,
        worker=assignment.worker,
        dataset_id=task.dataset_id,
        kind=item.kind,
        correct=bool(assignment.answer["answer"]) == item.answer,
    )
    score_update(worker=assignment.worker, dataset_id=task.dataset_id, kind=item.kind, serving=serving)


def gold_withdraw_intercept(assignment: Assignment) -> queue.TaskChange | None:
    """Queue undo interceptor: an embedded gold item's answer is taken back as any undecided question's is, as
    far as the worker can tell (a new lease on the same task), so an undo tells no gold item apart; its score
    keeps the answer first given (a gold answer is never rewritten) and the answer given again is not scored.
    A training (qualification) answer stands: those items are announced and their feedback already shown."""
    if assignment.task.pool != GOLD_POOL:
        return None
    found = lease_purpose(assignment.lease_note)
    if found is not None and found[0] == Purpose.QUALIFICATION:
        raise kinds.AnswerStands("a training answer stands: the right answer has been shown")
    return queue.TaskChange()


def qualification_feedback(assignment: Assignment) -> dict[str, Any]:
    """Submit-response extras (fresh or replayed submit): after a wrong answer to a qualification item, what
    the right answer was (the training of Su et al. 2012). Nothing for embedded gold or ordinary tasks; only a
    gold pool task costs a query."""
    if assignment.task.pool != GOLD_POOL:
        return {}
    found = lease_purpose(assignment.lease_note)
    if found is not None and found[0] != Purpose.QUALIFICATION:
        return {}  # embedded gold: no query, as for an ordinary task (and it may not be scored yet)
    answer = GoldAnswer.objects.select_related("serving__item").filter(assignment_id=assignment.pk).first()
    if answer is None or answer.correct or answer.serving.purpose != Purpose.QUALIFICATION:
        return {}
    item = answer.serving.item
    return {
        "feedback": {
            "correct": False,
            "expected": {"answer": item.answer},
            "explanation": item.explanation or "Look again at the concept's description before answering.",
        }
    }


def training_progress(assignment: Assignment) -> dict[str, Any]:
    """Lease extras: a qualification item is announced as a training question with its place in the attempt
    ("question 3 of 8"). Only qualification items: while a worker takes an attempt of a (dataset, kind), every
    question of that pair they are given is one, so this says nothing the worker does not know; embedded gold
    gets nothing, like any ordinary task, and no lease but a qualification one costs a query."""
    if assignment.task.pool != GOLD_POOL:
        return {}
    found = lease_purpose(assignment.lease_note)
    if found is None or found[0] != Purpose.QUALIFICATION:
        return {}
    dataset_id = assignment.task.dataset_id
    answered = GoldAnswer.objects.filter(
        worker_id=assignment.worker_id,
        dataset_id=dataset_id,
        kind=assignment.task.topic,
        serving__attempt=found[1],
    ).count()
    size = GoldSettings.for_dataset(dataset_id).qualification_size
    return {"training": {"number": min(answered + 1, size), "size": size}}


def _score_row(*, worker, dataset_id: int, kind: str, correct: int, answered: int, settings, rule):
    """Lock and rewrite the worker's score row of (dataset, kind) from these counts."""
    row, _ = WorkerScore.objects.select_for_update().get_or_create(
        worker=worker, dataset_id=dataset_id, kind=kind, defaults={"mean": 0.0, "lower": 0.0, "p_below": 0.0}
    )
    s = scoring.score(correct, answered, settings.prior, rule)
    row.answered, row.correct = answered, correct
    row.mean, row.lower, row.p_below = s.mean, s.lower, s.p_below
    return row, s


def score_update(*, worker, dataset_id: int, kind: str, serving: GoldServing) -> WorkerScore:
    """Recount the worker's gold answers of (dataset, kind) and of the whole dataset, settle a finished
    qualification attempt, and block the worker from the dataset when all their gold answers say so."""
    settings = GoldSettings.for_dataset(dataset_id)
    everything = GoldAnswer.objects.filter(worker=worker, dataset_id=dataset_id)
    # The dataset row first: it serializes blocking decisions of one worker in one dataset.
    total, s_all = _score_row(
        worker=worker,
        dataset_id=dataset_id,
        kind=ScoreKind.ALL,
        correct=everything.filter(correct=True).count(),
        answered=everything.count(),
        settings=settings,
        rule=settings.rule,
    )
    total.save()
    answers = everything.filter(kind=kind)
    row, _ = _score_row(
        worker=worker,
        dataset_id=dataset_id,
        kind=kind,
        correct=answers.filter(correct=True).count(),
        answered=answers.count(),
        settings=settings,
        rule=settings.rule,
    )
    passed = False
    if serving.purpose == Purpose.QUALIFICATION and not row.qualified:
        row.qualification_answered += 1
        _qualification_settle(row, answers.filter(serving__attempt=serving.attempt), settings)
        passed = row.qualified
    row.save()
    if passed:  # once per worker and (dataset, kind): a qualified row takes no more qualification items
        events.qualification_passed(worker, dataset_id, kind, serving.task.kind)
    if s_all.blocked and not Block.objects.filter(worker=worker, dataset_id=dataset_id).exists():
        worker_block(worker=worker, dataset_id=dataset_id, kind=ScoreKind.ALL, score=s_all)
    return row


def _qualification_settle(row: WorkerScore, attempt_answers, settings: GoldSettings) -> None:
    """An attempt is a fixed set of `qualification_size` items, each answered once: scored when complete. A
    failed attempt waits `qualification_cooldown` seconds; the next one is served fresh items."""
    results = list(attempt_answers.values_list("correct", flat=True))
    if len(results) < settings.qualification_size:
        return
    if sum(results) >= settings.qualification_pass:
        row.qualified = True
    else:
        row.qualification_failed += 1
        row.qualification_retry_at = timezone.now() + timedelta(seconds=settings.qualification_cooldown)


def drawer_verdict_record(box_id: int, accepted: bool) -> None:
    """Box pipeline hook: the quality question accepted or rejected a drawn box. The verdict counts for or
    against its drawer, scored and blocked by the same rule as gold answers (with the drawing threshold).
    Runs in the transaction that applied the verdict."""
    box = Box.objects.select_related("image").filter(pk=box_id).first()
    if box is None or box.drawn_by_id is None:
        return
    dataset_id = box.image.dataset_id
    _, created = DrawVerdict.objects.get_or_create(
        box=box, defaults={"worker_id": box.drawn_by_id, "dataset_id": dataset_id, "accepted": accepted}
    )
    if not created:
        return  # the first verdict on a box is the one that counts
    settings = GoldSettings.for_dataset(dataset_id)
    verdicts = DrawVerdict.objects.filter(worker_id=box.drawn_by_id, dataset_id=dataset_id)
    row, s = _score_row(
        worker=box.drawn_by,
        dataset_id=dataset_id,
        kind=ScoreKind.BOX_DRAW,
        correct=verdicts.filter(accepted=True).count(),
        answered=verdicts.count(),
        settings=settings,
        rule=settings.draw_rule,
    )
    row.save()
    if s.blocked and not Block.objects.filter(worker_id=box.drawn_by_id, dataset_id=dataset_id).exists():
        worker_block(worker=box.drawn_by, dataset_id=dataset_id, kind=ScoreKind.BOX_DRAW, score=s)


def worker_block(*, worker, dataset_id: int, kind: str, score: scoring.Score) -> Block:
    """Block the worker from every task of the dataset (`kind` names the evidence), void their votes on
    questions of every kind there and repair the questions they touched (open ones keep collecting votes from
    others, decided ones are re-checked and reopened if undecided), and end the leases they hold there."""
    with transaction.atomic():
        votes = Vote.objects.filter(worker=worker, question__dataset_id=dataset_id).values_list(
            "pk", flat=True
        )
        report = votes_void(votes=list(votes), reason=f"worker {worker.pk} blocked in dataset {dataset_id}")
        block = Block.objects.create(
            worker=worker,
            dataset_id=dataset_id,
            kind=kind,
            answered=score.answered,
            correct=score.correct,
            p_below=score.p_below,
            repair=asdict(report),
        )
        # Leases they still hold there end now, so an answer they were about to send counts for nothing (the
        # answer being submitted, if this runs inside a submit, is stored already and not a lease any more).
        for lease in Assignment.objects.filter(
            worker=worker, task__dataset_id=dataset_id, state=AssignmentState.LEASED
        ).order_by("task_id"):
            queue.assignment_release(assignment=lease)
        payments_decide(dataset_id=dataset_id, worker=worker)
        return block


def worker_block_set(*, worker, dataset_id: int, blocked: bool, reason: str, actor) -> BlockAction:
    """An organizer blocks or unblocks a worker in a dataset, with a reason. A block ends the leases they hold
    there (like the evidence's block) but keeps their votes: it says nothing about their answers' quality.
    Unblocking lifts only an organizer's block, never the gold evidence's."""
    if not reason.strip():
        raise ValueError("give a reason")
    with transaction.atomic():
        action = BlockAction.objects.create(
            worker=worker, dataset_id=dataset_id, blocked=blocked, reason=reason.strip(), actor=actor
        )
        if blocked:
            for lease in Assignment.objects.filter(
                worker=worker, task__dataset_id=dataset_id, state=AssignmentState.LEASED
            ).order_by("task_id"):
                queue.assignment_release(assignment=lease)
        return action


def _recommend(
    assignment: Assignment, gold: GoldAnswer | None, kind: str | None, blocked, bonus
) -> tuple[str, str]:
    if gold is not None and not gold.correct and assignment.worker_id in blocked:
        return Recommendation.REJECT, "wrong answer to a gold item; the worker was blocked in this dataset"
    if (assignment.worker_id, kind) in bonus:
        return Recommendation.BONUS, "gold accuracy's lower bound is above the bonus line"
    return Recommendation.APPROVE, "approved"  # never rejected for a non-gold answer


def payments_decide(*, dataset_id: int, worker=None) -> int:
    """Add a PaymentDecision for every submitted assignment of the dataset (of one worker) whose
    recommendation is new or changed. Returns the number of rows added."""
    settings = GoldSettings.for_dataset(dataset_id)
    with transaction.atomic():
        assignments = Assignment.objects.filter(task__dataset_id=dataset_id, state=AssignmentState.SUBMITTED)
        if worker is not None:
            assignments = assignments.filter(worker=worker)
        assignments = list(assignments.select_related("task__question", "gold__serving__item").order_by("id"))
        blocked = set(Block.objects.filter(dataset_id=dataset_id).values_list("worker_id", flat=True))
        bonus = set()
        for row in WorkerScore.objects.filter(dataset_id=dataset_id):
            s = scoring.score(row.correct, row.answered, settings.prior, settings.rule)
            if row.worker_id not in blocked and scoring.bonus_due(s, settings.bonus_lower):
                bonus.add((row.worker_id, row.kind))
        current: dict[int, str] = {}
        for p in PaymentDecision.objects.filter(assignment__in=assignments).order_by("id"):
            current[p.assignment_id] = p.recommendation
        new = []
        for a in assignments:
            gold = getattr(a, "gold", None)
            question = getattr(a.task, "question", None)
            kind = gold.kind if gold is not None else (question.kind if question is not None else None)
            rec, reason = _recommend(a, gold, kind, blocked, bonus)
            if current.get(a.pk) != rec:
                new.append(
                    PaymentDecision(
                        assignment=a,
                        worker_id=a.worker_id,
                        dataset_id=dataset_id,
                        recommendation=rec,
                        reason=reason,
                    )
                )
        PaymentDecision.objects.bulk_create(new)
        return len(new)
