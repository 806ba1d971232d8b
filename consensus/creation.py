"""Creating the engine's binary questions and serving them: one question and its queue task per target, a
calibration batch while (kind, concept) has no table, and the task every question (and a gold item) is served
by (ILSVRC §3.1.3, dynamic consensus). Voting and deciding are `consensus.engine`'s.

A creator takes its concept row FOR SHARE while the concept has no table in use, against the table writer's
lock (docs/architecture.md, *Lock order*); creators of one concept never wait for each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connections, transaction

from annotation import counters, queue
from annotation.models import Box, Dataset, Image, Task, TaskExclusion
from hierarchy.models import Concept

from . import statements, tally
from .estimates import kind_has_calibration_data, table_in_use
from .models import ConsensusSettings, Question, QuestionKind, QuestionRole, QuestionState
from .stopping import policy_of
from .wording import question_text

TASK_KIND = "question"
# Calibration questions are served before production ones: production of a new concept waits for their table.
CALIBRATION_PRIORITY_BOOST = 10


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


def subject_key(image_id: int | None, box_id: int | None, pk: int | None) -> tuple[str, int | None]:
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
        key = subject_key(image_id, box_id, pk)
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
        questions_serve(served, text, settings, priority)
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
    kind has some (the Dawid-Skene fallback of `estimate_for` can decide), every `1 / calibration_fraction`-th
    question of the concept joins the batch and the others are served at once: a rare concept (most hierarchy
    nodes and leaves) costs calibration votes on a tenth of its questions, as a verification pool does."""
    underway = calibration_subjects(kind=kind, concept_id=concept.pk, dataset_id=dataset.pk)["underway"]
    for target, is_cal in zip(targets, wanted, strict=True):
        if is_cal:
            underway.add(subject_key(_pk(target.image), _pk(target.box), None))
    fallback = kind_has_calibration_data(kind, settings.calibration_min)
    every = max(1, round(1.0 / settings.calibration_fraction)) if settings.calibration_fraction > 0 else 0
    asked = Question.objects.filter(dataset=dataset, kind=kind, concept=concept).count()
    flags, waits = [], []
    for i, (target, is_cal) in enumerate(zip(targets, wanted, strict=True)):
        key = subject_key(_pk(target.image), _pk(target.box), None)
        full = len(underway) >= settings.calibration_min
        promote = not is_cal and not full and (not fallback or (every and (asked + i) % every == 0))
        if promote:
            underway.add(key)
        flags.append(is_cal or promote)
        waits.append(not is_cal and not promote and full)
    return flags, waits


def _pk(obj) -> int | None:
    return None if obj is None else obj.pk


def questions_serve(
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
