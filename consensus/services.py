"""State changes of the binary-question engine: create questions, record a vote and decide, rebuild a concept's
calibration table, and queue image verification (ILSVRC §3.1.3, dynamic consensus).

Locks are taken task row first, then question row (the order the queue's submit already uses), so voting,
re-evaluation after a new table and the queue never deadlock. A table rebuild locks the concept row first, which
serializes rebuilds of one concept; the vote path never takes that lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connections, transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from annotation import counters, queue
from annotation.models import Box, Dataset, Image, Task, TaskExclusion, TaskState
from annotation.queue import QueueError
from hierarchy.models import Concept
from outbox import services as outbox

from . import events, statements, tally, wording
from .estimates import (  # noqa: F401 (services.X stays the name callers use)
    BOX_WEIGHTED_MIN_VOTES,
    COUNTED,
    NO_DATA_ACCURACY,
    REJECT_ERROR_KEY,
    TARGET_PRECISION_KEY,
    WEIGHTED_BOX_KINDS,
    WEIGHTED_KINDS,
    Estimate,
    _estimate,
    _kind_has_calibration_data,
    _table_cap,
    _weighted_estimate,
    evidence_refresh_due,
    policy_for,
    table_in_use,
    table_newest,
)
from .extension import extends, extension_open
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

TASK_KIND = "question"
# Calibration questions are served before production ones: production of a new concept waits for their table.
CALIBRATION_PRIORITY_BOOST = 10


class QuestionClosed(QueueError):
    code = "question_closed"


class AlreadyVoted(QueueError):
    code = "already_voted"


# --- wording -----------------------------------------------------------------------------------------------


def question_text(kind: str, concept: Concept, dataset_id: int) -> str:
    # One wording for a dataset's real questions and its gold (consensus/wording.py).
    return wording.question_text(kind, concept, dataset_id)


def _decide(question: Question, settings: ConsensusSettings | None) -> tuple[Decision, Estimate]:
    """The question's decision on its votes so far: by its own count rule when it carries one (the plain vote,
    the fixed box questions, multi-label's `vote` engine; no settings needed), else by the dataset's calibrated
    policy, a REVIEW at the cap settled where the decided set allows (`question_settle`)."""
    if question.rule:
        return decide(None, question.yes_count, question.no_count, policy_of(question.rule)), COUNTED
    assert settings is not None
    estimate = _estimate(question, settings)
    policy = policy_for(settings, question.kind, question.subject)
    p = float("nan") if estimate.p is None else estimate.p
    decision = Decision.from_code(int(policy.decide_probability(p, question.n_votes)))
    if decision == Decision.REVIEW and extends(question, settings):
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
    capped leaves at P 0.95-0.997 were absent 5 times in 68, at P >= 0.997 once in 53."""
    dataset_policy = policy_for(settings, question.kind)
    stricter = policy_for(settings, question.kind, question.subject) != dataset_policy
    if stricter and (np.isnan(p) or dataset_policy.tau_reject < p < dataset_policy.tau_accept):
        return Decision.REVIEW
    return settle_at_cap(p, decided_so_far(question), dataset_policy)


def decided_so_far(question: Question) -> DecidedSoFar:
    """The accepted and rejected questions of the question's (dataset, kind, concept) and their expected errors."""
    rows = (
        Question.objects.filter(
            dataset_id=question.dataset_id,
            kind=question.kind,
            concept_id=question.concept_id,
            state__in=(QuestionState.ACCEPTED, QuestionState.REJECTED),
            p__isnull=False,
        )
        .exclude(pk=question.pk)
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


def _finalize(
    question: Question, task: Task | None, decision: Decision, estimate: Estimate, settings, also=()
) -> None:
    """Close the question with a verdict, record the decision row, close its task, announce the event. `also`:
    more of the question's fields to write in the same UPDATE (a vote's counts)."""
    now = timezone.now()
    verdict = verdict_for(question, decision)
    previous_state = question.state
    before = tally.seen(question)
    question.state = VERDICT_STATE[verdict]
    question.p = estimate.p
    question.decided_at = now
    connection = connections[Question.objects.db]
    statements.question_write(connection, question, ["state", "p", "decided_at", *also])
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
    )
    if task is not None and question.rule:
        # The result the count-rule task kinds have always carried (read back by final_labels_rebuild).
        task.state = TaskState.DONE
        task.result = {
            "answer": {Verdict.ACCEPT: True, Verdict.REJECT: False}.get(verdict),
            "yes": question.yes_count,
            "no": question.no_count,
            "rule": str(policy_of(question.rule)),
        }
    elif task is not None:
        task.state = TaskState.DONE
        task.result = {
            "decision": verdict.value,
            "answer": {Verdict.ACCEPT: True, Verdict.REJECT: False}.get(verdict),
            "p": estimate.p,
            "yes": question.yes_count,
            "no": question.no_count,
        }
    events.announce(events.QuestionDecided(question=question, decision=row, previous_state=previous_state))


def verdict_for(question: Question, decision: Decision) -> Verdict:
    """The verdict a final decision gives the question: a count rule may close a REVIEW unanswered."""
    if decision == Decision.REVIEW and (question.rule or {}).get("on_review") == "close":
        return Verdict.UNANSWERED
    return Verdict(decision.value)


# --- creating questions ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """What one question is about: an image, optionally a box on it, and any other references. `round` tells
    apart a question asked again about the same subject (a box job's coverage question after each new box)."""

    image: Image | None = None
    box: Box | None = None
    subject: dict[str, Any] | None = None
    round: int = 0
    # The payload of the question's task when its task kind shows more than the wording (a count-rule kind).
    payload: dict[str, Any] | None = None


def _task_for(
    question: Question,
    text: str,
    settings: ConsensusSettings,
    priority: int,
    task_kind: str = TASK_KIND,
    payload: dict[str, Any] | None = None,
) -> Task:
    if question.rule:
        # A count-rule question is served under its own task kind, up to its cap. No topic: gold qualification
        # gates `question` tasks by topic, so a topic would withhold these from workers who cannot qualify.
        return Task(
            kind=task_kind,
            dataset_id=question.dataset_id,
            image_id=question.image_id,
            concept_id=question.concept_id,
            box_id=question.box_id,
            payload=payload if payload is not None else {"question": text},
            priority=priority,
            answers_wanted=policy_of(question.rule).cap,
        )
    calibration = question.role == QuestionRole.CALIBRATION
    return question_task(
        dataset_id=question.dataset_id,
        kind=question.kind,
        image_id=question.image_id,
        concept_id=question.concept_id,
        box_id=question.box_id,
        text=text,
        priority=priority + (CALIBRATION_PRIORITY_BOOST if calibration else 0),
        answers_wanted=settings.calibration_votes if calibration else settings.vote_cap,
    )


def question_task(
    *,
    dataset_id: int,
    kind: str,
    image_id: int | None,
    concept_id: int,
    box_id: int | None,
    text: str,
    priority: int,
    answers_wanted: int,
    pool: str = "",
) -> Task:
    """The (unsaved) queue task that asks a binary question: every question's, and a gold item's (in gold's
    reserved pool), so both carry the same columns and payload keys."""
    return Task(
        kind=TASK_KIND,
        topic=kind,
        pool=pool,
        dataset_id=dataset_id,
        image_id=image_id,
        concept_id=concept_id,
        box_id=box_id,
        payload={"question": text},
        priority=priority,
        answers_wanted=answers_wanted,
    )


def _subject_key(image_id: int | None, box_id: int | None, pk: int | None) -> tuple[str, int | None]:
    """What a calibration question is about, for counting distinct calibration subjects: its box, else its
    image (a coverage question asked again in a new round is about the same image)."""
    if box_id is not None:
        return ("box", box_id)
    if image_id is not None:
        return ("image", image_id)
    return ("question", pk)


def calibration_subjects(*, kind: str, concept_id: int, dataset_id: int | None = None) -> dict[str, set]:
    """Distinct subjects of (kind, concept)'s calibration questions: `complete` (calibration votes in, any
    dataset) and `underway` (complete, plus the dataset's own still collecting). A question settled short of
    its calibration votes (nobody left could answer it: `consensus.starved`) collects no more: counting it as
    underway held its batch's paused and waiting questions for a table that could never come."""
    rows = Question.objects.filter(
        kind=kind, concept_id=concept_id, role=QuestionRole.CALIBRATION
    ).values_list("image_id", "box_id", "pk", "dataset_id", "yes_count", "no_count", "min_votes", "state")
    complete: set = set()
    underway: set = set()
    for image_id, box_id, pk, ds, yes, no, wanted, state in rows:
        key = _subject_key(image_id, box_id, pk)
        if yes + no >= wanted:
            complete.add(key)
            underway.add(key)
        elif ds == dataset_id and state == QuestionState.OPEN:
            underway.add(key)
    return {"complete": complete, "underway": underway}


def questions_create(
    *,
    dataset: Dataset,
    kind: str,
    concept: Concept,
    targets: Sequence[Target],
    calibration: Sequence[bool] | None = None,
    text: str | None = None,
    priority: int = 0,
) -> list[Question]:
    """Create one question (and its queue task) per target, decided by the dataset's calibrated policy (questions
    carrying a count rule are created by `consensus.count_questions`).

    `calibration[i]` says whether target i is a calibration question. While (kind, concept) has no table in use
    (`table_in_use`), a question is a production question that *waits* (no task) only when enough calibration
    questions on distinct subjects are underway to build a table: `calibration_min` of them, counting those
    complete in any dataset and this dataset's still collecting votes. Any other question is served: as a
    calibration question (whatever `calibration` says, in whatever order questions arrive: hierarchy questions
    and the box pipeline create them one by one, and they collect into the batch as they come), or, once the
    kind has calibration data for the fallback estimator, as a production question (`_roles_without_table`).
    No question is ever left waiting for a table that its batch cannot build.

    The concept row is locked FOR SHARE (against the rebuild's lock) before deciding that a question waits, so
    a table built concurrently either is seen here or sees the waiting question and serves it (no race with a
    rebuild); creators of one concept do not wait for each other."""
    if kind not in QuestionKind.values:
        raise ValueError(f"unknown question kind {kind!r}; known: {', '.join(QuestionKind.values)}")
    if calibration is not None and len(calibration) != len(targets):
        raise ValueError("calibration must say one flag per target")
    settings = ConsensusSettings.for_dataset(dataset.pk)
    text = text or question_text(kind, concept, dataset.pk)
    with transaction.atomic(), counters.held():
        has_table = table_in_use(kind, concept.pk, settings.calibration_min) is not None
        if not has_table:
            # Serialized with calibration_rebuild (which takes the row FOR NO KEY UPDATE), never with another
            # creator: a share lock (docs/architecture.md, *Lock order*).
            statements.concept_share_lock(connections[Concept.objects.db], concept.pk)
            has_table = table_in_use(kind, concept.pk, settings.calibration_min) is not None
        flags = [False] * len(targets) if calibration is None else list(calibration)
        waits = [False] * len(targets)
        if not has_table:
            flags, waits = _roles_without_table(dataset, kind, concept, targets, flags, settings)
        questions = []
        for target, is_cal, waiting in zip(targets, flags, waits, strict=True):
            questions.append(
                Question(
                    kind=kind,
                    dataset=dataset,
                    concept=concept,
                    image=target.image,
                    box=target.box,
                    subject=target.subject or {},
                    round=target.round,
                    role=QuestionRole.CALIBRATION if is_cal else QuestionRole.PRODUCTION,
                    state=QuestionState.WAITING if waiting else QuestionState.OPEN,
                    min_votes=settings.calibration_votes if is_cal else 1,
                )
            )
        Question.objects.bulk_create(questions, batch_size=500)
        tally.questions_counted(questions)
        served = [q for q in questions if q.state == QuestionState.OPEN]
        _serve(served, text, settings, priority)
    return questions


def _roles_without_table(
    dataset: Dataset,
    kind: str,
    concept: Concept,
    targets: Sequence[Target],
    wanted: list[bool],
    settings: ConsensusSettings,
) -> tuple[list[bool], list[bool]]:
    """(calibration?, waiting?) per target of a (kind, concept) with no table in use.

    A production question waits only when `calibration_min` distinct calibration subjects are underway (its
    table is sure to come). Otherwise, while the kind has no calibration data, it joins the batch; once the
    kind has some (the Dawid-Skene fallback of `_estimate` can decide), every `1 / calibration_fraction`-th
    question of the concept joins the batch and the others are served at once: a rare concept (most hierarchy
    nodes and leaves) costs calibration votes on a tenth of its questions, as a verification pool does."""
    underway = calibration_subjects(kind=kind, concept_id=concept.pk, dataset_id=dataset.pk)["underway"]
    for target, is_cal in zip(targets, wanted, strict=True):
        if is_cal:
            underway.add(_subject_key(_pk(target.image), _pk(target.box), None))
    fallback = _kind_has_calibration_data(kind, settings.calibration_min)
    every = max(1, round(1.0 / settings.calibration_fraction)) if settings.calibration_fraction > 0 else 0
    asked = Question.objects.filter(dataset=dataset, kind=kind, concept=concept).count()
    flags, waits = [], []
    for i, (target, is_cal) in enumerate(zip(targets, wanted, strict=True)):
        key = _subject_key(_pk(target.image), _pk(target.box), None)
        full = len(underway) >= settings.calibration_min
        promote = not is_cal and not full and (not fallback or (every and (asked + i) % every == 0))
        if promote:
            underway.add(key)
        flags.append(is_cal or promote)
        waits.append(not is_cal and not promote and full)
    return flags, waits


def _pk(obj) -> int | None:
    return None if obj is None else obj.pk


def _serve(
    questions: list[Question],
    text: str | None,
    settings: ConsensusSettings,
    priority: int,
    task_kind: str = TASK_KIND,
    payloads: Sequence[dict[str, Any] | None] | None = None,
) -> None:
    """Create the queue tasks of these questions and link them."""
    if not questions:
        return
    concepts = {c.pk: c for c in Concept.objects.filter(pk__in={q.concept_id for q in questions})}
    payloads = payloads or [None] * len(questions)
    tasks = [
        _task_for(
            q,
            text or question_text(q.kind, concepts[q.concept_id], q.dataset_id),
            settings,
            priority,
            task_kind,
            payload,
        )
        for q, payload in zip(questions, payloads, strict=True)
    ]
    queue.tasks_create(tasks, batch_size=500)
    for question, task in zip(questions, tasks, strict=True):
        question.task = task
    Question.objects.bulk_update(questions, ["task", "state"], batch_size=500)
    # A subject may name workers who must not answer (the drawer of the box a quality question is about),
    # whenever the question is served: at creation or after waiting for its calibration table.
    TaskExclusion.objects.bulk_create(
        [
            TaskExclusion(task=q.task, worker_id=int(w))
            for q in questions
            for w in (q.subject or {}).get("exclude_workers", ())
        ],
        batch_size=500,
    )


# --- voting ------------------------------------------------------------------------------------------------


def vote_apply(*, task: Task, worker, answer: bool, assignment=None) -> Question:
    """Record `worker`'s vote on the question served by the locked `task` and run the stopping rule.

    Changes `task.state`/`task.result` in memory; the caller saves the task (the queue's submit does).
    Must run inside a transaction that holds the task row lock."""
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
        decision, estimate = _decide(question, None)
        if decision == Decision.ASK_MORE:
            statements.question_write(connection, question, counts)
            # The running tally the vote-results API shows while a count-rule task is open.
            task.result = {"yes": question.yes_count, "no": question.no_count}
        else:
            _finalize(question, task, decision, estimate, None, also=counts)
        return question
    if question.role == QuestionRole.CALIBRATION or question.n_votes < question.min_votes:
        # The kind's calibration reads (`_kind_has_calibration_data`, `calibration_subjects`) take a calibration
        # question's votes from its row, so they are written before deciding; a production question's go with
        # its P or verdict, in one UPDATE.
        statements.question_write(connection, question, counts)
        counts = []
    settings = _settings_loaded(question)
    if question.n_votes < question.min_votes:
        return question
    decision, estimate = _decide(question, settings)
    if estimate.fit_votes is not None and evidence_refresh_due(estimate.table, estimate.fit_votes):
        _after_commit_rebuild(question.kind, question.concept_id, question.dataset_id)  # its fit outgrown
    if question.role == QuestionRole.CALIBRATION and question.n_votes == question.min_votes:
        # Its calibration votes are in: they may complete a batch (or refine the table), so a rebuild check
        # runs after commit. While a batch big enough for a table is underway, the question pauses (task
        # done, question open) and is decided by that table once it lands; otherwise it is decided now by
        # the table in use, or the fallbacks of `_estimate` (a rare concept's batch may never fill up).
        _after_commit_rebuild(question.kind, question.concept_id, question.dataset_id)
        if estimate.p is None or _table_coming(question, settings):
            task.state = TaskState.DONE
            task.result = {"calibration": "complete"}
            return question
        if decision == Decision.ASK_MORE:
            _task_continue(task, settings)
    if decision == Decision.ASK_MORE:
        extension_open(question, task, settings)
        question.p = estimate.p
        statements.question_write(connection, question, ["p", *counts])
    else:
        _finalize(question, task, decision, estimate, settings, also=counts)
    return question


def _settings_loaded(question: Question) -> ConsensusSettings:
    """The settings of a question loaded with `select_related("dataset__consensus_settings")`, or the defaults
    (`ConsensusSettings.for_dataset` without its query)."""
    try:
        return question.dataset.consensus_settings
    except ConsensusSettings.DoesNotExist:
        return ConsensusSettings(dataset_id=question.dataset_id)


def _table_coming(question: Question, settings: ConsensusSettings) -> bool:
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
    task.answers_wanted = settings.vote_cap
    task.priority -= CALIBRATION_PRIORITY_BOOST
    queue.tasks_update([task.pk], answers_wanted=task.answers_wanted, priority=task.priority)


def vote_record(*, question: Question, worker, answer: bool, assignment=None) -> Question:
    """Record a vote outside the queue (scripts, imports): locks the task then the question, saves the task."""
    with transaction.atomic(), counters.held():
        if question.task_id is None:
            raise QuestionClosed("this question is waiting for its calibration table; it takes no vote now")
        task = Task.objects.select_for_update(no_key=True).get(pk=question.task_id)
        result = vote_apply(task=task, worker=worker, answer=answer, assignment=assignment)
        task.answers_count = F("answers_count") + 1
        queue.task_save(task, ["state", "result", "answers_count"])
        return result


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
        decision, estimate = _decide(question, settings)
        paused = task is not None and task.state == TaskState.DONE
        if paused and (estimate.p is None or _table_coming(question, settings)):
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
            _finalize(question, task, decision, estimate, settings)
            if task is not None:
                queue.task_save(task, ["state", "result"])
        return decision


# --- calibration -------------------------------------------------------------------------------------------


def _after_commit_rebuild(kind: str, concept_id: int, dataset_id: int) -> None:
    """Record the rebuild in the outbox with the vote that completed the batch: it reaches a worker even when
    the broker is down at commit."""
    outbox.message_enqueue(
        "consensus.tasks.calibration_rebuild", (kind, concept_id, dataset_id), dataset_id=dataset_id
    )


# --- image verification ------------------------------------------------------------------------------------
