"""Calibration tables of the engine: whether a (kind, concept)'s calibration batch is complete, building its
table from the calibration votes (one writer per concept), and re-evaluating the questions that waited for it
or were decided by an older table. Run after commit by `consensus.tasks.calibration_rebuild`, which the vote
completing a batch records in the outbox (`engine.calibration_rebuild_enqueue`), as do voiding (a blocked worker's
votes) and, at most once per doubling of the kind's votes, a vote that finds its table's fit outgrown
(`evidence_refresh_due`): a table is never stored again because an ordinary vote moved the fit."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Count, F, Q

from annotation import counters, queue
from annotation.models import Task, TaskState
from hierarchy.models import Concept

from .calibration import build_table
from .creation import questions_serve, subject_key
from .engine import calibration_rebuild_enqueue, question_decide
from .estimates import EVIDENCE_KINDS, evidence_refresh_due, table_cap, table_in_use
from .evidence_table import build_evidence_table, prefix_evidence
from .models import (
    CalibrationTable,
    ConsensusSettings,
    Question,
    QuestionKind,
    QuestionRole,
    QuestionState,
    Vote,
    VoteVoid,
)
from .reliability_fits import fit_with_standing
from .stopping import Decision


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
    *, kind: str, concept_id: int, dataset_id: int | None = None, min_images: int | None = None
) -> CalibrationTable | None:
    """Build (kind, concept)'s table from every calibration question that has its calibration votes, in any
    dataset, then serve the questions that waited for it and decide the paused calibration questions.

    A table is built only from at least `calibration_min` (of `dataset_id`'s settings, the defaults without
    one) distinct calibration subjects, whatever order the questions arrived in; until then nothing is built.
    Once a table is in use, it is refined when `dataset_id`'s calibration batch is complete (or on an explicit
    call without a dataset). Idempotent: a table built from the same votes is not built twice. Returns the
    table in use (None while there is none). `min_images` overrides the settings' minimum (repairs)."""
    settings = ConsensusSettings.for_dataset(dataset_id) if dataset_id is not None else ConsensusSettings()
    if min_images is not None:
        settings.calibration_min = min_images
    with transaction.atomic(), counters.held():
        # One table writer of a concept at a time, and no question of it created meanwhile that would wait for
        # a table (questions_create takes the row FOR SHARE); NO KEY, so rows referencing the concept can
        # still be inserted (their foreign key check takes FOR KEY SHARE).
        Concept.objects.select_for_update(no_key=True).get(pk=concept_id)
        in_use = table_in_use(kind, concept_id, settings.calibration_min)
        stale = _evidence_stale(in_use, kind)
        calibrated = Q(yes_count__gte=F("min_votes") - F("no_count"))
        questions = Question.objects.filter(kind=kind, concept_id=concept_id, role=QuestionRole.CALIBRATION)
        if stale:
            # After voiding, a calibration question that had its votes counts with the ones left: a blocked
            # worker's votes on a batch must not leave the batch too small for a table until they are replaced.
            questions = questions.annotate(cast=Count("votes")).filter(
                calibrated | Q(cast__gte=F("min_votes"))
            )
        else:
            questions = questions.filter(calibrated)
        rows = list(questions.values_list("pk", "min_votes", "image_id", "box_id"))
        subjects = {subject_key(image_id, box_id, pk) for pk, _, image_id, box_id in rows}
        enough = len(subjects) >= settings.calibration_min
        refine = (
            in_use is None
            or dataset_id is None
            or calibration_complete(kind=kind, concept_id=concept_id, dataset_id=dataset_id)
            or stale
        )
        if enough and refine:
            built = _table_build(kind, concept_id, {pk: n for pk, n, _, _ in rows}, len(subjects))
            in_use = built or in_use
        questions_reevaluate(kind=kind, concept_id=concept_id)
    # Outside the concept's lock, each in a transaction of its own: a decision sets pipelines in motion (the
    # labelings that asked, their next questions under other concepts), which must not wait while this
    # concept's row is held (docs/architecture.md, *Lock order*).
    paused_decide(kind=kind)
    return in_use


def _table_build(
    kind: str, concept_id: int, limit: dict[int, int], n_subjects: int
) -> CalibrationTable | None:
    """Store a table from the calibration votes of these questions (pk -> calibration votes), unless the newest
    measured table saw exactly these votes (and, for an evidence table, no vote was voided since and the kind's
    fit has not outgrown it: `estimates.evidence_refresh_due`). Returns the new row, or None when nothing
    changed."""
    sequences: dict[int, list[tuple[int, bool]]] = {pk: [] for pk in limit}
    last_vote = 0
    for qid, worker_id, answer, vote_id in (
        Vote.objects.filter(question_id__in=limit, void__isnull=True)
        .order_by("id")
        .values_list("question_id", "worker_id", "answer", "id")
    ):
        # Only each question's calibration votes: later votes exist only on questions the rule found
        # ambiguous, and counting them would bias the long patterns towards ambiguity.
        if len(sequences[qid]) < limit[qid]:
            sequences[qid].append((worker_id, answer))
            last_vote = max(last_vote, vote_id)
    n_votes = sum(map(len, sequences.values()))
    newest = (
        CalibrationTable.objects.filter(kind=kind, concept_id=concept_id, n_images__gt=0)
        .order_by("-id")
        .first()
    )
    if (
        newest is not None
        and newest.last_vote_id == last_vote
        and newest.n_votes == n_votes
        and not _evidence_stale(newest, kind)
    ):
        return None
    fitted = fit_with_standing(kind) if kind in EVIDENCE_KINDS else None
    tie_label = 1.0 if kind == QuestionKind.HIERARCHY else 0.5
    ordered = [sequences[pk] for pk in sorted(sequences)]
    table = build_table([[a for _, a in seq] for seq in ordered], cap=table_cap(), tie_label=tie_label)
    data = table.to_dict()
    if fitted is not None:
        data.update(_evidence_part(ordered, fitted, tie_label), void_clock=_void_clock())
    return CalibrationTable.objects.create(
        kind=kind,
        concept_id=concept_id,
        table=data,
        n_images=n_subjects,  # distinct subjects: what the minimum is about
        n_votes=table.n_votes,
        method=table.method,
        last_vote_id=last_vote,
    )


def _void_clock() -> int:
    return VoteVoid.objects.order_by("-id").values_list("id", flat=True).first() or 0


def _evidence_stale(row: CalibrationTable | None, kind: str) -> bool:
    """Whether a stored table's evidence part is due again although its calibration votes are the same: a vote
    was voided since (a blocked worker's: the fit and the workers' standing changed), or the kind's fit has
    outgrown the one it was built under (`evidence_refresh_due`). A count table never is."""
    if row is None or kind not in EVIDENCE_KINDS or "evidence" not in row.table:
        return False
    if row.table.get("void_clock") != _void_clock():
        return True
    fitted = fit_with_standing(kind)
    return fitted is not None and evidence_refresh_due(row, fitted[2])


def _evidence_part(ordered: list[list[tuple[int, bool]]], fitted, tie_label: float) -> dict:
    """The evidence table of these calibration vote sequences under the kind's fit and its workers' standing
    (consensus/evidence_table.py), and the fit's size, which says when it is due again."""
    result, standing, fit_votes = fitted
    excluded = standing.excluded
    prefixes = [
        prefix_evidence(result.reliability, [w for w, _ in seq], [a for _, a in seq], excluded)
        for seq in ordered
    ]
    evidence = build_evidence_table(
        [e for e, _ in prefixes], [v for _, v in prefixes], excluded=sorted(excluded), tie_label=tie_label
    )
    return {"evidence": evidence.to_dict(), "fit_votes": fit_votes}


def questions_reevaluate(*, kind: str, concept_id: int) -> dict[str, int]:
    """After a table lands, in the transaction that holds the concept's row: serve the (kind, concept)
    questions that waited for one (in each dataset whose settings accept the table)."""
    out = {"served": 0}
    with transaction.atomic(), counters.held():
        waiting = list(
            Question.objects.select_for_update(no_key=True)
            .filter(kind=kind, concept_id=concept_id, state=QuestionState.WAITING)
            .order_by("id")
        )
        by_dataset: dict[int, list[Question]] = {}
        for q in waiting:
            by_dataset.setdefault(q.dataset_id, []).append(q)
        for dataset_id, group in by_dataset.items():
            settings = ConsensusSettings.for_dataset(dataset_id)
            if table_in_use(kind, concept_id, settings.calibration_min) is None:
                continue
            for q in group:
                q.state = QuestionState.OPEN
            questions_serve(group, None, settings, 0)
            out["served"] += len(group)
    return out


def paused_decide(*, kind: str) -> dict[str, int]:
    """Decide (or reopen) the calibration questions of the kind paused with their calibration votes, each in
    a transaction of its own (`question_decide`): a new table, or the kind-wide fallback, may decide them now."""
    out = {"decided": 0, "reopened": 0}
    paused = Question.objects.filter(
        kind=kind,
        role=QuestionRole.CALIBRATION,
        state=QuestionState.OPEN,
        task__state=TaskState.DONE,
    ).order_by("id")
    for question in paused:
        if question.n_votes < question.min_votes:
            continue
        decision = question_decide(question)
        if decision != Decision.ASK_MORE:
            out["decided"] += 1
        elif Task.objects.filter(pk=question.task_id, state=TaskState.OPEN).exists():
            out["reopened"] += 1
    return out


def calibration_votes_lowered(*, dataset_id: int, votes: int) -> int:
    """The organizer lowered the dataset's calibration votes to `votes` (a small crowd cannot give the number
    they were asked with: organize/stalls.py's "Lower the calibration votes"). The calibration questions still
    collecting their votes ask for `votes` now, not the number they were created with: one that already has
    them stops asking (its task done, paused like any whose calibration votes are in) and its (kind, concept)
    table is rebuilt after commit (through the outbox), which decides it. Call in the settings' transaction.
    Returns how many questions changed."""
    candidates = list(
        Question.objects.filter(
            dataset_id=dataset_id,
            role=QuestionRole.CALIBRATION,
            state=QuestionState.OPEN,
            min_votes__gt=votes,
            task__isnull=False,
        ).values_list("task_id", flat=True)
    )
    if not candidates:
        return 0
    # The vote path's lock order: the task, then its question.
    tasks = queue.tasks_lock(candidates)
    questions = list(
        Question.objects.select_for_update(no_key=True)
        .filter(
            task_id__in=list(tasks),
            role=QuestionRole.CALIBRATION,
            state=QuestionState.OPEN,
            min_votes__gt=votes,
        )
        .order_by("pk")
    )
    complete, asking, rebuild = [], [], set()
    for question in questions:
        task = tasks[question.task_id]
        if task.state == TaskState.DONE:
            continue  # paused already: its calibration votes are in
        if question.n_votes >= votes:
            complete.append(task.pk)
            rebuild.add((question.kind, question.concept_id))
        elif task.answers_wanted > votes:
            asking.append(task.pk)
    Question.objects.filter(pk__in=[q.pk for q in questions]).update(min_votes=votes)
    if complete:
        queue.tasks_update(
            complete, state=TaskState.DONE, result={"calibration": "complete"}, answers_wanted=votes
        )
    if asking:
        queue.tasks_update(asking, answers_wanted=votes)
    for kind, concept_id in sorted(rebuild):
        calibration_rebuild_enqueue(kind, concept_id, dataset_id)
    return len(questions)
