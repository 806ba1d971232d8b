"""The binary-question engine's state changes: record a vote and run the stopping rule, decide a question again
(after a new table), settle it at its cap, and close it with a verdict (ILSVRC §3.1.3, dynamic consensus).
Creating questions is `consensus.creation`'s; estimating P is `consensus.estimates`'.

Locks are taken task row first, then question row (the order the queue's submit already uses), so voting,
re-evaluation after a new table and the queue never deadlock. A table rebuild locks the concept row first, which
serializes rebuilds of one concept; the vote path never takes that lock.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db import connections, transaction
from django.db.models import Count, F, OuterRef, Q, Subquery, Sum
from django.utils import timezone

from annotation import counters, queue
from annotation.models import Task, TaskState
from annotation.queue import KEEP, QueueError, TaskChange, sqlrows
from outbox import services as outbox

from . import events, statements, tally
from .creation import CALIBRATION_PRIORITY_BOOST, calibration_subjects
from .estimates import COUNTED, Estimate, estimate_for, evidence_refresh_due, policy_for, table_in_use
from .extension import extends, extension_open, reliable_left
from .models import (
    VERDICT_STATE,
    ConsensusSettings,
    Question,
    QuestionDecision,
    QuestionKind,
    QuestionRole,
    QuestionState,
    Verdict,
    Vote,
)
from .stopping import DecidedSoFar, Decision, decide, policy_of, settle_at_cap


class QuestionClosed(QueueError):
    code = "question_closed"


class AlreadyVoted(QueueError):
    code = "already_voted"


# --- deciding ----------------------------------------------------------------------------------------------


def decision_for(question: Question, settings: ConsensusSettings | None) -> tuple[Decision, Estimate]:
    """The question's decision on its votes so far: by its own count rule when it carries one (the plain vote,
    the fixed box questions, multi-label's `vote` engine; no settings needed), else by the dataset's calibrated
    policy, a REVIEW at the cap settled where the decided set allows (`question_settle`)."""
    if question.rule:
        return decide(None, question.yes_count, question.no_count, policy_of(question.rule)), COUNTED
    assert settings is not None
    estimate = estimate_for(question, settings)
    policy = policy_for(settings, question.kind, question.subject)
    p = float("nan") if estimate.p is None else estimate.p
    decision = Decision.from_code(int(policy.decide_probability(p, question.n_votes)))
    if decision == Decision.REVIEW and extends(question, settings) and reliable_left(question):
        decision = Decision.ASK_MORE  # the most reliable workers are asked on (consensus/extension.py)
    elif decision == Decision.REVIEW:
        decision = question_settle(question, p, settings)
    return decision, estimate


def question_settle(question: Question, p: float, settings: ConsensusSettings) -> Decision:
    """A question that can get no more votes (its cap reached, or nobody left to ask: consensus/starved.py):
    settled against the dataset's guarantee for its decided set (`stopping.settle_at_cap`), or review.

    A question whose pipeline asked for a stricter bar than the dataset's (a hierarchy leaf: subject
    `target_precision` / `reject_error`) is settled only where its P meets the dataset's own bar
    (P >= tau_accept, or P <= tau_reject, of the dataset's policy); in between it goes to a person. The pipeline
    asked for the stricter bar because the engine's P overstates those questions (a confusable sibling makes
    honest workers err together): measured over four hostile runs (docs/consensus.md, *Settling at the cap*),
    capped leaves at P 0.95-0.997 were absent 5 times in 68, at P >= 0.997 once in 53.

    A high-level hierarchy question (kind `hierarchy`, Algorithm 1's inner nodes) is answered "yes": its
    "yes" labels nothing, it only asks its children, whose own questions decide the labels, while a wrong "no"
    drops every class under it unasked (ILSVRC §3.3.3, as the `vote` engine's rule decides "yes" at its cap).
    Before, such questions went to a person (2 of 18 reviewer items of a DET 200 run, issue 33)."""
    if question.kind == QuestionKind.HIERARCHY and not question.rule:
        return Decision.ACCEPT
    dataset_policy = policy_for(settings, question.kind)
    stricter = policy_for(settings, question.kind, question.subject) != dataset_policy
    if stricter and (np.isnan(p) or dataset_policy.tau_reject < p < dataset_policy.tau_accept):
        return Decision.REVIEW
    return settle_at_cap(p, decided_so_far(question), dataset_policy)


def decided_so_far(question: Question) -> DecidedSoFar:
    """The accepted and rejected questions of the question's (dataset, kind, concept) and their expected errors.

    Only the crowd's own decisions count: a question a reviewer decided keeps the crowd's P (the split that
    sent it to a person), but its label is the reviewer's, so 1 - P (or P) is not its risk. Counted as before,
    a reviewer's reject at P 0.53 spent the concept's whole reject budget, and the next capped question at
    P 0.002 went to a person too (a hostile VOC 20 run, issue 33: 5 of its 25 leaf reviews)."""
    last_reviewer = (
        QuestionDecision.objects.filter(question_id=OuterRef("pk")).order_by("-id").values("reviewer_id")[:1]
    )
    rows = (
        Question.objects.filter(
            dataset_id=question.dataset_id,
            kind=question.kind,
            concept_id=question.concept_id,
            state__in=(QuestionState.ACCEPTED, QuestionState.REJECTED),
            p__isnull=False,
        )
        .exclude(pk=question.pk)
        .alias(last_reviewer=Subquery(last_reviewer))
        .filter(last_reviewer__isnull=True)
        .aggregate(
            accepted=Count("id", filter=Q(state=QuestionState.ACCEPTED)),
            accepted_p=Sum("p", filter=Q(state=QuestionState.ACCEPTED)),
            rejected=Count("id", filter=Q(state=QuestionState.REJECTED)),
            rejected_p=Sum("p", filter=Q(state=QuestionState.REJECTED)),
        )
    )
    return DecidedSoFar(
        accepted=rows["accepted"],
        accepted_risk=rows["accepted"] - (rows["accepted_p"] or 0.0),
        rejected=rows["rejected"],
        rejected_risk=rows["rejected_p"] or 0.0,
    )


def question_finalize(
    question: Question,
    decision: Decision,
    estimate: Estimate,
    also=(),
    writes: sqlrows.Writes | None = None,
) -> TaskChange:
    """Close the question with a verdict, record the decision row, announce the event, and return what closes
    its task (done, with the verdict as its result) for the caller to write with the task. `also`: more of the
    question's fields to write in the same UPDATE (a vote's counts). With `writes` (a submit's) the question's
    UPDATE and the decision row go with them, and the event carries them to its handlers; else they are
    written now."""
    now = timezone.now()
    verdict = verdict_for(question, decision)
    previous_state = question.state
    before = tally.seen(question)
    question.state = VERDICT_STATE[verdict]
    question.p = estimate.p
    question.decided_at = now
    connection = connections[Question.objects.db]
    statements.question_write(connection, question, ["state", "p", "decided_at", *also], writes)
    tally.question_changed(question, before)
    row = statements.decision_insert(
        connection,
        QuestionDecision(
            question=question,
            decision=verdict,
            p=estimate.p,
            yes_count=question.yes_count,
            no_count=question.no_count,
            estimator=estimate.estimator,
            table=estimate.table,
        ),
        writes,
    )
    if question.rule:
        # The result the count-rule task kinds have always carried (read back by final_labels_rebuild).
        result = {
            "answer": {Verdict.ACCEPT: True, Verdict.REJECT: False}.get(verdict),
            "yes": question.yes_count,
            "no": question.no_count,
            "rule": str(policy_of(question.rule)),
        }
    else:
        result = {
            "decision": verdict.value,
            "answer": {Verdict.ACCEPT: True, Verdict.REJECT: False}.get(verdict),
            "p": estimate.p,
            "yes": question.yes_count,
            "no": question.no_count,
        }
    events.announce(
        events.QuestionDecided(question=question, decision=row, previous_state=previous_state, writes=writes)
    )
    return TaskChange(state=TaskState.DONE, result=result)


def task_change_apply(task: Task, change: TaskChange) -> None:
    """Set what `change` changes on a task the caller holds locked and saves itself (outside the queue's
    submit, which writes the change with its own fields)."""
    if change.state is not None:
        task.state = change.state
    if change.result is not KEEP:
        task.result = change.result


def verdict_for(question: Question, decision: Decision) -> Verdict:
    """The verdict a final decision gives the question: a count rule may close a REVIEW unanswered."""
    if decision == Decision.REVIEW and (question.rule or {}).get("on_review") == "close":
        return Verdict.UNANSWERED
    return Verdict(decision.value)


# --- voting and deciding again ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Voted:
    """What a vote did: the question as it stands now, and what changes on the task that serves it (its state
    and result), which the caller writes with the task (the queue's submit in its own UPDATE)."""

    question: Question
    change: TaskChange


def vote_apply(
    *, task: Task, worker, answer: bool, assignment=None, writes: sqlrows.Writes | None = None
) -> Voted:
    """Record `worker`'s vote on the question served by the locked `task` and run the stopping rule.

    Leaves the task's state and result to the caller (`Voted.change`); a task's other fields that a vote changes
    (a calibration question asking on, an extension: `answers_wanted`, `priority`) are written at once, as the
    queue's submit writes only its own fields of the task row. Must run inside a transaction that holds the
    task row lock. The vote itself is stored at once (its constraint says whether it counts); with `writes`
    (the submit's) the question's changes and a verdict's rows go with them, else they are written now."""
    # The dataset's settings come with the locked question (a LEFT JOIN; only the question row is locked).
    connection = connections[Question.objects.db]
    question = statements.question_lock(connection, task.pk)
    question.task = task  # also the task's cached `question`: the kind's public payload reads it
    if question.state != QuestionState.OPEN:
        raise QuestionClosed(
            f"this question is {question.get_state_display().lower()}; it takes no more votes"
        )
    if task.state == TaskState.DONE:
        raise QuestionClosed("this question is waiting for its calibration table; it takes no vote now")
    vote = Vote(question=question, worker=worker, answer=answer, assignment=assignment)
    if not statements.vote_insert(connection, vote):
        raise AlreadyVoted("you already answered this question")
    # The question row is locked until commit, so the in-memory counts are exact.
    if answer:
        question.yes_count += 1
    else:
        question.no_count += 1
    counts = ["yes_count", "no_count"]
    if question.rule:
        # A count rule needs no settings, table or calibration role; counts go with the verdict that decides.
        decision, estimate = decision_for(question, None)
        if decision == Decision.ASK_MORE:
            statements.question_write(connection, question, counts, writes)
            # The running tally the vote-results API shows while a count-rule task is open.
            return Voted(question, TaskChange(result={"yes": question.yes_count, "no": question.no_count}))
        return Voted(question, question_finalize(question, decision, estimate, also=counts, writes=writes))
    if question.n_votes < question.min_votes:
        statements.question_write(connection, question, counts, writes)
        return Voted(question, TaskChange())
    if question.role == QuestionRole.CALIBRATION:
        # The kind's calibration reads (`kind_has_calibration_data`, `calibration_subjects`) take a calibration
        # question's votes from its row, so they are written now, before deciding; a production question's go
        # with its P or verdict, in one UPDATE.
        statements.question_write(connection, question, counts)
        counts = []
    settings = _settings_loaded(question)
    decision, estimate = decision_for(question, settings)
    if estimate.fit_votes is not None and evidence_refresh_due(estimate.table, estimate.fit_votes):
        # The kind's fit has outgrown the one its evidence table was built under: the table is built again.
        calibration_rebuild_enqueue(question.kind, question.concept_id, question.dataset_id)
    if question.role == QuestionRole.CALIBRATION and question.n_votes == question.min_votes:
        # Its calibration votes are in: they may complete a batch (or refine the table), so a rebuild check
        # runs after commit. While a batch big enough for a table is underway, the question pauses (task
        # done, question open) and is decided by that table once it lands; otherwise it is decided now by
        # the table in use, or the fallbacks of `estimate_for` (a rare concept's batch may never fill up).
        calibration_rebuild_enqueue(question.kind, question.concept_id, question.dataset_id)
        if estimate.p is None or table_coming(question, settings):
            return Voted(question, TaskChange(state=TaskState.DONE, result={"calibration": "complete"}))
        if decision == Decision.ASK_MORE:
            _task_continue(task, settings)
    if decision == Decision.ASK_MORE:
        extension_open(question, task, settings)
        question.p = estimate.p
        statements.question_write(connection, question, ["p", *counts], writes)
        return Voted(question, TaskChange())
    return Voted(question, question_finalize(question, decision, estimate, also=counts, writes=writes))


def _settings_loaded(question: Question) -> ConsensusSettings:
    """The settings of a question loaded with `select_related("dataset__consensus_settings")`, or the defaults
    (`ConsensusSettings.for_dataset` without its query)."""
    try:
        return question.dataset.consensus_settings
    except ConsensusSettings.DoesNotExist:
        return ConsensusSettings(dataset_id=question.dataset_id)


def table_coming(question: Question, settings: ConsensusSettings) -> bool:
    """Whether the question's (kind, concept) has no table in use yet but enough calibration subjects underway
    for one: a table that is sure to come (once they all have their calibration votes)."""
    if table_in_use(question.kind, question.concept_id, settings.calibration_min) is not None:
        return False
    underway = calibration_subjects(
        kind=question.kind, concept_id=question.concept_id, dataset_id=question.dataset_id
    )["underway"]
    return len(underway) >= settings.calibration_min


def _task_continue(task: Task, settings: ConsensusSettings) -> None:
    """A calibration question the rule could not decide from its calibration votes asks on, like production:
    up to the vote cap, without the calibration priority boost. Written at once: the queue's submit saves
    only its own fields of the locked task row."""
    queue.tasks_update(
        [task.pk], answers_wanted=settings.vote_cap, priority=task.priority - CALIBRATION_PRIORITY_BOOST
    )


def vote_record(*, question: Question, worker, answer: bool, assignment=None) -> Question:
    """Record a vote outside the queue (scripts, imports): locks the task then the question, saves the task."""
    with transaction.atomic(), counters.held():
        if question.task_id is None:
            raise QuestionClosed("this question is waiting for its calibration table; it takes no vote now")
        task = Task.objects.select_for_update(no_key=True).get(pk=question.task_id)
        voted = vote_apply(task=task, worker=worker, answer=answer, assignment=assignment)
        task_change_apply(task, voted.change)
        task.answers_count = F("answers_count") + 1
        queue.task_save(task, ["state", "result", "answers_count"])
        return voted.question


def question_decide(question: Question) -> Decision:
    """Re-run the stopping rule on a question's votes now (after a new table): decide it, or reopen it for more
    votes. Locks its task, then the question. Returns the decision (ASK_MORE when it stays open)."""
    with transaction.atomic(), counters.held():
        locked = Task.objects.select_for_update(no_key=True)
        task = locked.get(pk=question.task_id) if question.task_id else None
        question = Question.objects.select_for_update(no_key=True).get(pk=question.pk)
        if question.state != QuestionState.OPEN or question.n_votes < question.min_votes:
            return Decision.ASK_MORE
        settings = ConsensusSettings.for_dataset(question.dataset_id)
        decision, estimate = decision_for(question, settings)
        paused = task is not None and task.state == TaskState.DONE
        if paused and (estimate.p is None or table_coming(question, settings)):
            return Decision.ASK_MORE  # its batch's table is still to come: a paused question stays paused
        if decision == Decision.ASK_MORE:
            question.p = estimate.p
            question.save(update_fields=["p"])
            if task is not None and task.state == TaskState.DONE:
                # A paused calibration question the table cannot decide yet: back to the queue, up to the cap.
                task.state, task.result = TaskState.OPEN, None
                task.answers_wanted = settings.vote_cap
                task.priority -= CALIBRATION_PRIORITY_BOOST
                queue.task_save(task, ["state", "result", "answers_wanted", "priority"])
        else:
            change = question_finalize(question, decision, estimate)
            if task is not None:
                task_change_apply(task, change)
                queue.task_save(task, ["state", "result"])
        return decision


def calibration_rebuild_enqueue(kind: str, concept_id: int, dataset_id: int) -> None:
    """Record the rebuild in the outbox with the vote that completed the batch: it reaches a worker even when
    the broker is down at commit."""
    outbox.message_enqueue(
        "consensus.tasks.calibration_rebuild", (kind, concept_id, dataset_id), dataset_id=dataset_id
    )
