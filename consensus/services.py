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
from django.db import IntegrityError, transaction
from django.db.models import Count, F, Max, Q, Sum
from django.utils import timezone

from annotation.models import Box, Dataset, Image, Task, TaskExclusion, TaskState
from annotation.queue import QueueError
from hierarchy.models import Concept

from . import events, wording
from .calibration import DEFAULT_CAP, ConfidenceTable, build_table, calibration_sample_size
from .models import (
    VERDICT_STATE,
    CalibrationTable,
    ConsensusSettings,
    Estimator,
    Question,
    QuestionDecision,
    QuestionKind,
    QuestionRole,
    QuestionState,
    Verdict,
    Vote,
)
from .reliability import fit_dawid_skene, posterior_positive
from .stopping import Decision, ThresholdPolicy, thresholds_for_precision

TASK_KIND = "question"
# Calibration questions are served before production ones: production of a new concept waits for their table.
CALIBRATION_PRIORITY_BOOST = 10


class QuestionClosed(QueueError):
    code = "question_closed"


class AlreadyVoted(QueueError):
    code = "already_voted"


# --- wording -----------------------------------------------------------------------------------------------


def question_text(kind: str, concept: Concept) -> str:
    return wording.question_text(
        kind, concept
    )  # one wording for real questions and gold (consensus/wording.py)


# --- policy and estimators ---------------------------------------------------------------------------------


def policy_for(settings: ConsensusSettings, kind: str) -> ThresholdPolicy:
    # Hierarchy questions favour "yes": a false "no" prunes a whole subtree (ILSVRC §3.3.3).
    return thresholds_for_precision(
        settings.target_precision,
        reject_error=settings.reject_error,
        favour_yes=settings.favour_yes or kind == QuestionKind.HIERARCHY,
        cap=settings.vote_cap,
    )


def table_newest(kind: str, concept_id: int) -> CalibrationTable | None:
    return CalibrationTable.objects.filter(kind=kind, concept_id=concept_id).order_by("-id").first()


def _table_cap() -> int:
    # A table must cover every dataset's vote cap, or lookups past it read as "undecided" until review.
    biggest = ConsensusSettings.objects.aggregate(m=Max("vote_cap"))["m"] or 0
    return max(DEFAULT_CAP, biggest)


@dataclass(frozen=True)
class Estimate:
    p: float | None
    table: CalibrationTable | None


def _estimate(question: Question, settings: ConsensusSettings) -> Estimate:
    """P(positive) of the question from its votes so far under the dataset's estimator."""
    if settings.estimator == Estimator.WEIGHTED:
        # Dawid-Skene over every vote of this (kind, concept), in any dataset: a worker's record on the concept
        # weighs their vote. Refit per decision; cheap at thousands of votes (see docs/consensus.md).
        rows = list(
            Vote.objects.filter(question__kind=question.kind, question__concept_id=question.concept_id)
            .filter(void__isnull=True)
            .values_list("question_id", "worker_id", "answer")
            .order_by("id")
        )
        if not rows:
            return Estimate(None, None)
        items, workers, answers = (np.asarray(col) for col in zip(*rows, strict=True))
        fit = fit_dawid_skene(items, workers, answers.astype(bool))
        mine = items == question.pk
        return Estimate(posterior_positive(fit.reliability, workers[mine], answers[mine].astype(bool)), None)
    row = table_newest(question.kind, question.concept_id)
    if row is None:
        return Estimate(None, None)
    table = ConfidenceTable.from_dict(row.table)
    a, b = question.yes_count, question.no_count
    p = table.p_positive(a, b) if a + b <= table.cap else None
    return Estimate(p, row)


def _decide(question: Question, settings: ConsensusSettings) -> tuple[Decision, Estimate]:
    estimate = _estimate(question, settings)
    policy = policy_for(settings, question.kind)
    p = float("nan") if estimate.p is None else estimate.p
    code = int(policy.decide_probability(p, question.n_votes))
    return Decision.from_code(code), estimate


def _finalize(
    question: Question, task: Task | None, decision: Decision, estimate: Estimate, settings
) -> None:
    """Close the question with a verdict, record the decision row, close its task, announce the event."""
    now = timezone.now()
    verdict = Verdict(decision.value)
    question.state = VERDICT_STATE[verdict]
    question.p = estimate.p
    question.decided_at = now
    question.save(update_fields=["state", "p", "decided_at"])
    row = QuestionDecision.objects.create(
        question=question,
        decision=verdict,
        p=estimate.p,
        yes_count=question.yes_count,
        no_count=question.no_count,
        estimator=settings.estimator,
        table=estimate.table,
    )
    if task is not None:
        task.state = TaskState.DONE
        task.result = {
            "decision": verdict.value,
            "answer": {Verdict.ACCEPT: True, Verdict.REJECT: False}.get(verdict),
            "p": estimate.p,
            "yes": question.yes_count,
            "no": question.no_count,
        }
    events.announce(events.QuestionDecided(question=question, decision=row))


# --- creating questions ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """What one question is about: an image, optionally a box on it, and any other references. `round` tells
    apart a question asked again about the same subject (a box job's coverage question after each new box)."""

    image: Image | None = None
    box: Box | None = None
    subject: dict[str, Any] | None = None
    round: int = 0


def _task_for(question: Question, text: str, settings: ConsensusSettings, priority: int) -> Task:
    calibration = question.role == QuestionRole.CALIBRATION
    return Task(
        kind=TASK_KIND,
        dataset_id=question.dataset_id,
        image_id=question.image_id,
        concept_id=question.concept_id,
        box_id=question.box_id,
        payload={"question": text},
        priority=priority + (CALIBRATION_PRIORITY_BOOST if calibration else 0),
        answers_wanted=settings.calibration_votes if calibration else settings.vote_cap,
    )


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
    """Create one question (and its queue task) per target.

    `calibration[i]` says whether target i is a calibration question. Left out, questions of a (kind, concept)
    that has no table yet become calibration questions until the dataset has `calibration_min` of them (the
    box pipeline and hierarchy questions arrive one by one, not as a candidate pool). Production questions of a
    (kind, concept) without a table wait, with no task, until the table exists: no vote is spent on a question
    that cannot yet be decided."""
    if kind not in QuestionKind.values:
        raise ValueError(f"unknown question kind {kind!r}; known: {', '.join(QuestionKind.values)}")
    if calibration is not None and len(calibration) != len(targets):
        raise ValueError("calibration must say one flag per target")
    settings = ConsensusSettings.for_dataset(dataset.pk)
    text = text or question_text(kind, concept)
    with transaction.atomic():
        has_table = table_newest(kind, concept.pk) is not None
        if calibration is None:
            if has_table:
                calibration = [False] * len(targets)
            else:
                have = Question.objects.filter(
                    dataset=dataset, kind=kind, concept=concept, role=QuestionRole.CALIBRATION
                ).count()
                room = max(0, settings.calibration_min - have)
                calibration = [i < room for i in range(len(targets))]
        questions = []
        for target, is_cal in zip(targets, calibration, strict=True):
            role = QuestionRole.CALIBRATION if is_cal else QuestionRole.PRODUCTION
            waiting = not is_cal and not has_table
            questions.append(
                Question(
                    kind=kind,
                    dataset=dataset,
                    concept=concept,
                    image=target.image,
                    box=target.box,
                    subject=target.subject or {},
                    round=target.round,
                    role=role,
                    state=QuestionState.WAITING if waiting else QuestionState.OPEN,
                    min_votes=settings.calibration_votes if is_cal else 1,
                )
            )
        Question.objects.bulk_create(questions, batch_size=500)
        served = [q for q in questions if q.state == QuestionState.OPEN]
        _serve(served, text, settings, priority)
    return questions


def _serve(questions: list[Question], text: str | None, settings: ConsensusSettings, priority: int) -> None:
    """Create the queue tasks of these questions and link them."""
    if not questions:
        return
    concepts = {c.pk: c for c in Concept.objects.filter(pk__in={q.concept_id for q in questions})}
    tasks = [
        _task_for(q, text or question_text(q.kind, concepts[q.concept_id]), settings, priority)
        for q in questions
    ]
    Task.objects.bulk_create(tasks, batch_size=500)
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
    question = Question.objects.select_for_update().get(task=task)
    if question.state != QuestionState.OPEN:
        raise QuestionClosed(
            f"this question is {question.get_state_display().lower()}; it takes no more votes"
        )
    if task.state == TaskState.DONE:
        raise QuestionClosed("this question is waiting for its calibration table; it takes no vote now")
    try:
        with transaction.atomic():
            Vote.objects.create(question=question, worker=worker, answer=answer, assignment=assignment)
    except IntegrityError:
        raise AlreadyVoted("you already answered this question") from None
    # The question row is locked until commit, so the in-memory counts are exact.
    if answer:
        question.yes_count += 1
    else:
        question.no_count += 1
    question.save(update_fields=["yes_count", "no_count"])
    settings = ConsensusSettings.for_dataset(question.dataset_id)
    if question.n_votes < question.min_votes:
        return question
    if question.role == QuestionRole.CALIBRATION and question.n_votes == question.min_votes:
        # Its calibration votes are in: the question pauses until its (kind, concept) table is rebuilt with
        # them. Every pause enqueues a check after commit; whichever commit comes last sees the batch complete.
        task.state = TaskState.DONE
        task.result = {"calibration": "complete"}
        _after_commit_rebuild(question.kind, question.concept_id, question.dataset_id)
        return question
    decision, estimate = _decide(question, settings)
    if decision == Decision.ASK_MORE:
        question.p = estimate.p
        question.save(update_fields=["p"])
    else:
        _finalize(question, task, decision, estimate, settings)
    return question


def vote_record(*, question: Question, worker, answer: bool, assignment=None) -> Question:
    """Record a vote outside the queue (scripts, imports): locks the task then the question, saves the task."""
    with transaction.atomic():
        if question.task_id is None:
            raise QuestionClosed("this question is waiting for its calibration table; it takes no vote now")
        task = Task.objects.select_for_update().get(pk=question.task_id)
        result = vote_apply(task=task, worker=worker, answer=answer, assignment=assignment)
        task.answers_count = F("answers_count") + 1
        task.save(update_fields=["state", "result", "answers_count", "updated_at"])
        return result


def question_decide(question: Question) -> Decision:
    """Re-run the stopping rule on a question's votes now (after a new table): decide it, or reopen it for more
    votes. Locks its task, then the question. Returns the decision (ASK_MORE when it stays open)."""
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=question.task_id) if question.task_id else None
        question = Question.objects.select_for_update().get(pk=question.pk)
        if question.state != QuestionState.OPEN or question.n_votes < question.min_votes:
            return Decision.ASK_MORE
        settings = ConsensusSettings.for_dataset(question.dataset_id)
        decision, estimate = _decide(question, settings)
        if decision == Decision.ASK_MORE:
            question.p = estimate.p
            question.save(update_fields=["p"])
            if task is not None and task.state == TaskState.DONE:
                # A paused calibration question the table cannot decide yet: back to the queue, up to the cap.
                task.state, task.result = TaskState.OPEN, None
                task.answers_wanted = settings.vote_cap
                task.priority -= CALIBRATION_PRIORITY_BOOST
                task.save(update_fields=["state", "result", "answers_wanted", "priority", "updated_at"])
        else:
            _finalize(question, task, decision, estimate, settings)
            if task is not None:
                task.save(update_fields=["state", "result", "updated_at"])
        return decision


# --- calibration -------------------------------------------------------------------------------------------


def _after_commit_rebuild(kind: str, concept_id: int, dataset_id: int) -> None:
    from .tasks import calibration_rebuild as rebuild_task

    transaction.on_commit(lambda: rebuild_task.delay(kind, concept_id, dataset_id))


def calibration_complete(*, kind: str, concept_id: int, dataset_id: int) -> bool:
    """Whether every calibration question of (kind, concept) in the dataset has its calibration votes."""
    qs = Question.objects.filter(
        kind=kind, concept_id=concept_id, dataset_id=dataset_id, role=QuestionRole.CALIBRATION
    )
    counts = qs.aggregate(
        total=Count("id"), short=Count("id", filter=Q(yes_count__lt=F("min_votes") - F("no_count")))
    )
    return counts["total"] > 0 and counts["short"] == 0


def calibration_rebuild(
    *, kind: str, concept_id: int, dataset_id: int | None = None
) -> CalibrationTable | None:
    """Build (kind, concept)'s table from every calibration question that has its calibration votes, in any
    dataset, then serve the questions that waited for it and decide the paused calibration questions.

    With `dataset_id`, does nothing until that dataset's calibration batch is complete. Idempotent: a table
    built from the same votes is not built twice. Returns the table in use (None while there is none)."""
    if dataset_id is not None and not calibration_complete(
        kind=kind, concept_id=concept_id, dataset_id=dataset_id
    ):
        return table_newest(kind, concept_id)
    with transaction.atomic():
        Concept.objects.select_for_update().get(pk=concept_id)  # one rebuild of a concept at a time
        questions = list(
            Question.objects.filter(kind=kind, concept_id=concept_id, role=QuestionRole.CALIBRATION)
            .filter(yes_count__gte=F("min_votes") - F("no_count"))
            .values_list("pk", "min_votes")
        )
        newest = table_newest(kind, concept_id)
        if not questions:
            return newest
        limit = dict(questions)
        sequences: dict[int, list[bool]] = {pk: [] for pk in limit}
        last_vote = 0
        for qid, answer, vote_id in (
            Vote.objects.filter(question_id__in=limit, void__isnull=True)
            .order_by("id")
            .values_list("question_id", "answer", "id")
        ):
            # Only each question's calibration votes: later votes exist only on questions the rule found
            # ambiguous, and counting them would bias the long patterns towards ambiguity.
            if len(sequences[qid]) < limit[qid]:
                sequences[qid].append(answer)
                last_vote = max(last_vote, vote_id)
        if newest is not None and newest.last_vote_id == last_vote and newest.n_images == len(sequences):
            table_row = newest
        else:
            table = build_table(
                [sequences[pk] for pk in sorted(sequences)],
                cap=_table_cap(),
                tie_label=1.0 if kind == QuestionKind.HIERARCHY else 0.5,
            )
            table_row = CalibrationTable.objects.create(
                kind=kind,
                concept_id=concept_id,
                table=table.to_dict(),
                n_images=table.n_images,
                n_votes=table.n_votes,
                method=table.method,
                last_vote_id=last_vote,
            )
        questions_reevaluate(kind=kind, concept_id=concept_id)
        return table_row


def questions_reevaluate(*, kind: str, concept_id: int) -> dict[str, int]:
    """After a table lands: serve the (kind, concept) questions that waited for one, and decide (or reopen)
    the calibration questions paused with their calibration votes."""
    out = {"served": 0, "decided": 0, "reopened": 0}
    with transaction.atomic():
        waiting = list(
            Question.objects.select_for_update()
            .filter(kind=kind, concept_id=concept_id, state=QuestionState.WAITING)
            .order_by("id")
        )
        by_dataset: dict[int, list[Question]] = {}
        for q in waiting:
            q.state = QuestionState.OPEN
            by_dataset.setdefault(q.dataset_id, []).append(q)
        for dataset_id, group in by_dataset.items():
            _serve(group, None, ConsensusSettings.for_dataset(dataset_id), 0)
        out["served"] = len(waiting)
        paused = Question.objects.filter(
            kind=kind,
            concept_id=concept_id,
            role=QuestionRole.CALIBRATION,
            state=QuestionState.OPEN,
            task__state=TaskState.DONE,
        ).order_by("id")
        for question in paused:
            decision = question_decide(question)
            out["reopened" if decision == Decision.ASK_MORE else "decided"] += 1
    return out


# --- image verification ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerificationPlan:
    created: int
    calibration: int
    waiting: int
    table_reused: bool


def verification_queue(
    *,
    dataset: Dataset,
    concept: Concept,
    images: Sequence[Image] | None = None,
    calibrate: bool | None = None,
) -> VerificationPlan:
    """Queue "does this image show CONCEPT?" for candidate images (all of the dataset's by default).

    Calibration (default: only when (image_verify, concept) has no table yet and this dataset has not started
    one): a seeded random subset of the new candidates, `calibration_fraction` of them clamped to
    [calibration_min, calibration_max], each collecting `calibration_votes` votes. `calibrate=True` adds a
    subset even when a table exists, refining it; production then runs on the existing table meanwhile.
    Images that already have the question are skipped, so queuing twice asks nothing twice."""
    kind = QuestionKind.IMAGE_VERIFY
    settings = ConsensusSettings.for_dataset(dataset.pk)
    with transaction.atomic():
        pool = dataset.images.all() if images is None else Image.objects.filter(pk__in=[i.pk for i in images])
        asked = Question.objects.filter(dataset=dataset, kind=kind, concept=concept).values_list("image_id")
        candidates = list(pool.exclude(pk__in=asked).order_by("id"))
        has_table = table_newest(kind, concept.pk) is not None
        started = Question.objects.filter(
            dataset=dataset, kind=kind, concept=concept, role=QuestionRole.CALIBRATION
        ).exists()
        if calibrate is None:
            calibrate = not has_table and not started
        flags = np.zeros(len(candidates), dtype=bool)
        if calibrate and candidates:
            k = calibration_sample_size(
                len(candidates),
                fraction=settings.calibration_fraction,
                minimum=settings.calibration_min,
                maximum=settings.calibration_max,
            )
            rng = np.random.default_rng([settings.seed, concept.pk, dataset.pk])
            flags[rng.choice(len(candidates), size=k, replace=False)] = True
        questions = questions_create(
            dataset=dataset,
            kind=kind,
            concept=concept,
            targets=[Target(image=image) for image in candidates],
            calibration=[bool(f) for f in flags],
        )
    return VerificationPlan(
        created=len(questions),
        calibration=int(flags.sum()),
        waiting=sum(1 for q in questions if q.state == QuestionState.WAITING),
        table_reused=has_table and not calibrate,
    )


def verification_progress(*, dataset: Dataset, concept: Concept | None = None) -> dict[str, Any]:
    """Counts of a dataset's verification questions by role and state, and the votes they took."""
    qs = Question.objects.filter(dataset=dataset, kind=QuestionKind.IMAGE_VERIFY)
    if concept is not None:
        qs = qs.filter(concept=concept)
    by = {(r["role"], r["state"]): r["n"] for r in qs.values("role", "state").annotate(n=Count("id"))}
    votes = qs.aggregate(y=Sum("yes_count"), n=Sum("no_count"))
    return {
        "questions": sum(by.values()),
        "votes": (votes["y"] or 0) + (votes["n"] or 0),
        "by_state": {s: sum(n for (_, st), n in by.items() if st == s) for s in QuestionState.values},
        "calibration": sum(n for (role, _), n in by.items() if role == QuestionRole.CALIBRATION),
    }
