"""Services of the box pipeline (ILSVRC §3.2.1; Su, Deng, Fei-Fei 2012): start a job per (image, concept),
take drawn boxes and skips, react to quality and coverage decisions. Each service loads the job row under a
lock, applies one `annotation.pipeline` transition, appends the event, and executes the returned effects; the
quality and coverage questions are asked of consensus through `boxes.questions`.

Lock order: task row (the queue's submit) first, then the job row, then boxes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Case, F, Value, When

from annotation import counters, geometry, pipeline, queue
from annotation.models import (
    Box,
    BoxJob,
    BoxJobEvent,
    BoxJobStatus,
    BoxProvenance,
    BoxState,
    Dataset,
    Image,
    Task,
    TaskState,
)
from annotation.questions import COVERAGE, QUALITY, BinaryQuestion, text_for
from hierarchy.models import Concept
from predictions.models import BoxPrediction

from . import fixed_questions, questions
from .models import BoxExtremePoints, BoxSettings

logger = logging.getLogger(__name__)

DRAW_KIND = "box_draw"


class Hooks(list):
    """Subscribers of one box-pipeline event, called in list order inside the transaction that caused it."""

    def register(self, hook: Callable) -> None:
        if hook not in self:
            self.append(hook)

    def unregister(self, hook: Callable) -> None:
        if hook in self:
            self.remove(hook)


# A job sent to review: fn(job, reason, detail). A review app registers one at ready(); until then the job simply
# rests in status "review" for an organizer to find.
_review_hooks = Hooks()
review_hook_register, review_hook_unregister = _review_hooks.register, _review_hooks.unregister

# Boxes of a job were accepted: fn(job, box_ids) (the review app schedules its overlap scan with it).
_accepted_hooks = Hooks()
accepted_hook_register, accepted_hook_unregister = _accepted_hooks.register, _accepted_hooks.unregister

# The quality question's verdict on a drawn box: fn(box_id, accepted). Gold registers one to score drawers (a
# rejected box counts against its drawer).
_verdict_hooks = Hooks()
verdict_hook_register, verdict_hook_unregister = _verdict_hooks.register, _verdict_hooks.unregister


# --- starting jobs ------------------------------------------------------------------------------------------


def box_job_start(
    *,
    image: Image,
    concept,
    max_boxes: int = pipeline.DEFAULT_MAX_BOXES,
    max_rounds: int = pipeline.DEFAULT_MAX_ROUNDS,
    proposals: Sequence[Proposal] = (),
) -> tuple[BoxJob, bool]:
    """Start the box job for an (image, concept) pair verified to show the concept; the first DRAW is queued,
    or, given a model's `proposals` (at most `max_boxes`, in the order to ask them), they are stored as boxes
    of provenance "model" and the first is asked QUALITY (`pipeline.proposals_queued`).
    Idempotent: a second call returns the existing job and `created` False (the unique constraint decides),
    and stores no proposal."""
    state, effects = pipeline.new_job(max_boxes=max_boxes, max_rounds=max_rounds)
    with transaction.atomic(), counters.held():
        try:
            with transaction.atomic():
                job = BoxJob.objects.create(
                    dataset_id=image.dataset_id,
                    image=image,
                    concept=concept,
                    status=state.status.value,
                    state=state.to_dict(),
                    max_boxes=max_boxes,
                    max_rounds=max_rounds,
                )
        except IntegrityError:
            return BoxJob.objects.get(image=image, concept=concept), False
        if not proposals:
            _execute(job, state, effects)
            return job, True
        stored = Box.objects.bulk_create(
            Box(
                image_id=image.pk,
                concept_id=job.concept_id,
                x1=p.x1,
                y1=p.y1,
                x2=p.x2,
                y2=p.y2,
                state=BoxState.PENDING,
                provenance=BoxProvenance.MODEL,
                score=p.score,
            )
            for p in proposals
        )
        ids = [box.pk for box in stored]
        if any(pk is None for pk in ids):  # bulk_create returns ids on PostgreSQL and SQLite 3.35+
            raise RuntimeError("the database did not return the new boxes' ids")
        _advance(job, lambda s: pipeline.proposals_queued(s, ids))
        return job, True


@dataclass(frozen=True)
class Proposal:
    """A model's proposed box for a job to verify (original-image pixels) and its score in [0, 1]."""

    x1: float
    y1: float
    x2: float
    y2: float
    score: float


def on_leaves_present(*, image_id: int, concept_ids: Iterable[int]) -> int:
    """Hand-off from full multi-label annotation (`multilabel.labeling` calls it when an image finishes
    Algorithm 1): every leaf class found present in the image gets its box job, in the transaction that stored
    the labels. Idempotent (a finish announced again starts nothing twice). Returns jobs created."""
    concept_ids = list(concept_ids)
    if not concept_ids:
        return 0
    image = Image.objects.get(pk=image_id)
    settings = BoxSettings.for_dataset(image.dataset_id)
    created = 0
    for concept in Concept.objects.filter(pk__in=concept_ids).order_by("id"):
        proposals = _dataset_proposals(settings, image, concept) if settings.prediction_set_id else []
        created += box_job_start(image=image, concept=concept, proposals=proposals)[1]
    return created


def _dataset_proposals(settings: BoxSettings, image: Image, concept) -> list[Proposal]:
    """The dataset's chosen prediction set's proposals of `concept` on `image` at or above its threshold, highest
    score first, at most a job's max_boxes."""
    rows = BoxPrediction.objects.filter(
        prediction_set_id=settings.prediction_set_id,
        image=image,
        concept=concept,
        score__gte=settings.proposal_threshold,
    ).order_by("-score", "id")[: pipeline.DEFAULT_MAX_BOXES]
    return [Proposal(*row) for row in rows.values_list("x1", "y1", "x2", "y2", "score")]


def images_verified_present(dataset: Dataset, concept) -> list[Image]:
    """The dataset's images whose final label says `concept` is present: where boxing it is worth a draw."""
    return list(
        dataset.images.filter(final_labels__concept=concept, final_labels__present=True).order_by("id")
    )


@dataclass(frozen=True)
class StartReport:
    created: int
    existing: int


def box_jobs_start(
    *,
    dataset: Dataset,
    concept,
    images: Iterable[Image] | None = None,
    max_boxes: int = pipeline.DEFAULT_MAX_BOXES,
    max_rounds: int = pipeline.DEFAULT_MAX_ROUNDS,
) -> StartReport:
    """Start box jobs for `concept` on `images` (default: every image of the dataset), each in its own
    transaction so one large call never holds locks for long."""
    chosen = list(dataset.images.order_by("id")) if images is None else list(images)
    created = 0
    for image in chosen:
        _, new = box_job_start(image=image, concept=concept, max_boxes=max_boxes, max_rounds=max_rounds)
        created += new
    return StartReport(created=created, existing=len(chosen) - created)


# --- the DRAW answer ----------------------------------------------------------------------------------------


def accepted_boxes(image_id: int, concept_id: int) -> list[Box]:
    return list(
        Box.objects.filter(image_id=image_id, concept_id=concept_id, state=BoxState.ACCEPTED).order_by("id")
    )


def box_check(*, image: Image, concept_id: int, coords) -> geometry.Box:
    """Validate a drawn box: inside the image, x2 > x1, finite, big enough, and at least 5 px away from every
    accepted box of the concept in the image (the draw page's duplicate rule, ILSVRC §3.2.1). Raises
    `geometry.BoxError` with a message naming the problem."""
    if not isinstance(coords, list | tuple) or len(coords) != 4:
        raise geometry.BoxError('"box" must be a list of 4 numbers [x1, y1, x2, y2] in image pixels')
    for name, value in zip(("x1", "y1", "x2", "y2"), coords, strict=True):
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise geometry.BoxError(f"{name} must be a number, got {value!r}")
    box = geometry.validate_box(*coords, width=image.width, height=image.height)
    for existing in accepted_boxes(image.pk, concept_id):
        other = (existing.x1, existing.y1, existing.x2, existing.y2)
        if not geometry.differs_by_at_least(box, [other]):
            raise geometry.BoxError(
                f"this box is a duplicate of box {existing.pk}: draw a box around an instance that has no "
                f"box yet (some side must move by at least {geometry.DUPLICATE_MIN_DIFF_PX:g} px)"
            )
    return box


def _job_for_task(task: Task) -> BoxJob:
    return BoxJob.objects.select_for_update(no_key=True).get(pk=task.payload["job"])


def extreme_points_check(*, image: Image, concept_id: int, points) -> geometry.ExtremePoints:
    """Validate four extreme points (ICCV 2017 extreme clicking): inside the image, each the extreme one in its
    direction, and their bounds a box `box_check` accepts. Raises `geometry.BoxError` naming the problem."""
    checked = geometry.validate_extreme_points(points, image.width, image.height)
    box_check(image=image, concept_id=concept_id, coords=list(checked.bounds()))
    return checked


def box_submit(*, task: Task, worker, box: geometry.Box, points: geometry.ExtremePoints | None = None) -> Box:
    """Store a box the worker drew on a DRAW task (already checked by `box_check`), with the extreme points it
    was clicked from if any (already checked by `extreme_points_check`: the box is their bounds), and ask
    QUALITY."""
    if points is not None and geometry.Box(*points.bounds()) != box:
        raise geometry.BoxError("the box is not the bounds of its extreme points")
    job = _job_for_task(task)
    created = Box.objects.create(
        image_id=job.image_id,
        concept_id=job.concept_id,
        x1=box.x1,
        y1=box.y1,
        x2=box.x2,
        y2=box.y2,
        state=BoxState.PENDING,
        drawn_by=worker,
    )
    if points is not None:
        BoxExtremePoints.objects.create(
            box=created,
            **{
                f"{role}_{axis}": value
                for role in geometry.EXTREME_ROLES
                for axis, value in zip("xy", getattr(points, role), strict=True)
            },
        )
    counters.boxes_counted(job.dataset_id, drawn=1)
    _advance(job, lambda s: pipeline.box_drawn(s, created.pk, worker.pk))
    return created


def box_draw_skip(*, task: Task, worker) -> BoxJob:
    """The drawer says no instance is left without a box: not trusted alone, it queues a COVERAGE check."""
    job = _job_for_task(task)
    _advance(job, lambda s: pipeline.draw_skipped(s, worker.pk))
    return job


# --- decisions, called by whichever backend asked the question ----------------------------------------------


def on_quality_decided(box_id: int, accepted: bool) -> bool:
    """QUALITY decided for `box_id`. Returns False (and changes nothing) for a stale decision."""
    with transaction.atomic(), counters.held():
        applied = _on_box_decision(box_id, lambda s: pipeline.quality_decided(s, box_id, accepted))
        if applied:
            for hook in list(_verdict_hooks):
                hook(box_id, accepted)
        return applied


def on_quality_undecidable(box_id: int) -> bool:
    return _on_box_decision(box_id, lambda s: pipeline.quality_undecidable(s, box_id))


def on_coverage_decided(job_id: int, all_covered: bool) -> bool:
    return _on_job_decision(job_id, lambda s: pipeline.coverage_decided(s, all_covered))


def on_coverage_undecidable(job_id: int) -> bool:
    return _on_job_decision(job_id, pipeline.coverage_undecidable)


def on_question_decided(question: BinaryQuestion, outcome: bool | None) -> bool:
    """One entry point for decided box questions (`boxes.questions.box_question_report`): route a decision
    (None = undecidable) to its handler."""
    if question.kind == QUALITY:
        if question.box_id is None:
            raise ValueError("a quality question needs its box_id")
        if outcome is None:
            return on_quality_undecidable(question.box_id)
        return on_quality_decided(question.box_id, outcome)
    if question.kind == COVERAGE:
        if outcome is None:
            return on_coverage_undecidable(question.job_id)
        return on_coverage_decided(question.job_id, outcome)
    raise ValueError(f"not a box pipeline question kind: {question.kind!r}")


def box_job_unanswerable(*, job_id: int) -> bool:
    """Nobody can answer the job's open verification any more (no question in the queue asks it: the stuck
    sweep's finding), so a person decides, as when its question reaches the vote cap: QUALITY or COVERAGE
    undecidable, the job to review. Returns False when the job has moved on meanwhile."""
    with transaction.atomic(), counters.held():
        job = BoxJob.objects.select_for_update(no_key=True).get(pk=job_id)
        state = job_state(job)
        if state.status == pipeline.JobStatus.AWAITING_QUALITY and state.pending is not None:
            box_id = state.pending.box_id
            return _advance_or_ignore(job, lambda s: pipeline.quality_undecidable(s, box_id))
        if state.status == pipeline.JobStatus.AWAITING_COVERAGE:
            return _advance_or_ignore(job, pipeline.coverage_undecidable)
        return False


def box_job_review_resolve(*, job_id: int, outcome: str) -> BoxJob:
    """A reviewer resolved a job in review (`pipeline.ReviewOutcome`: accept, redraw or close); the job goes
    back to the pipeline. Raises `pipeline.TransitionError` when the job is not in review."""
    with transaction.atomic(), counters.held():
        job = BoxJob.objects.select_for_update(no_key=True).get(pk=job_id)
        _advance(job, lambda s: pipeline.review_decided(s, outcome))
        return job


def _on_box_decision(box_id: int, transition) -> bool:
    box = Box.objects.filter(pk=box_id).values("image_id", "concept_id").first()
    if box is None:
        raise LookupError(f"no box {box_id}")
    with transaction.atomic(), counters.held():
        job = BoxJob.objects.select_for_update(no_key=True).get(
            image_id=box["image_id"], concept_id=box["concept_id"]
        )
        return _advance_or_ignore(job, transition)


def _on_job_decision(job_id: int, transition) -> bool:
    with transaction.atomic(), counters.held():
        job = BoxJob.objects.select_for_update(no_key=True).get(pk=job_id)
        return _advance_or_ignore(job, transition)


def _advance_or_ignore(job: BoxJob, transition) -> bool:
    try:
        _advance(job, transition)
    except pipeline.TransitionError as exc:
        # A decision that arrives after the job moved on (e.g. a reviewer took it over) must not break the
        # vote that produced it; it is logged and dropped.
        logger.warning("box job %s ignored a stale decision: %s", job.pk, exc)
        return False
    return True


# --- applying transitions -----------------------------------------------------------------------------------


def job_state(job: BoxJob) -> pipeline.BoxJob:
    return pipeline.BoxJob.from_dict(job.state)


def _advance(job: BoxJob, transition: Callable[[pipeline.BoxJob], pipeline.Result]) -> None:
    """Apply one transition to a locked job row: append its event, cache the state, execute the effects."""
    before = job_state(job)
    after, effects = transition(before)
    data = after.to_dict()
    BoxJobEvent.objects.bulk_create(
        BoxJobEvent(job=job, seq=seq + 1, event=data["history"][seq]["event"])
        for seq in range(len(before.history), len(after.history))
    )
    job.state = data
    job.status = after.status.value
    job.save(update_fields=["state", "status", "updated_at"])
    _execute(job, after, effects)


def _execute(job: BoxJob, state: pipeline.BoxJob, effects: list[pipeline.Effect]) -> None:
    accepted: list[int] = []
    for effect in effects:
        match effect:
            case pipeline.QueueDraw(round=round_no, shown_box_ids=shown):
                queue.task_create(
                    kind=DRAW_KIND,
                    dataset_id=job.dataset_id,
                    image_id=job.image_id,
                    concept_id=job.concept_id,
                    payload={
                        "job": job.pk,
                        "round": round_no,
                        "shown_box_ids": list(shown),
                        # How this task's page draws (the dataset's setting now): it is answered that way.
                        "draw_mode": BoxSettings.for_dataset(job.dataset_id).draw_mode,
                    },
                    answers_wanted=1,
                )
            case pipeline.QueueQuality(box_id=box_id, exclude_worker=drawer):
                _ask(job, QUALITY, box_id, state.accepted_ids, () if drawer is None else (drawer,))
            case pipeline.QueueCoverage(box_ids=box_ids, exclude_workers=excluded):
                _ask(job, COVERAGE, None, box_ids, excluded)
            case pipeline.AcceptBox(box_id=box_id):
                # A model's proposal becomes `model+verified` with its acceptance; a drawn box keeps its own.
                verified = Case(
                    When(provenance=BoxProvenance.MODEL, then=Value(BoxProvenance.MODEL_VERIFIED)),
                    default=F("provenance"),
                )
                pending = Box.objects.filter(pk=box_id, state=BoxState.PENDING)
                if pending.update(state=BoxState.ACCEPTED, provenance=verified):
                    counters.boxes_counted(job.dataset_id, accepted=1)
                    accepted.append(box_id)
            case pipeline.DiscardBox(box_id=box_id):
                Box.objects.filter(pk=box_id, state=BoxState.PENDING).update(state=BoxState.REJECTED)
            case pipeline.SendToReview(reason=reason, detail=detail):
                BoxJob.objects.filter(pk=job.pk).update(review_reason=reason.value)
                job.review_reason = reason.value
                for hook in list(_review_hooks):
                    hook(job, reason.value, detail)
            case pipeline.Finish():
                pass  # the boxes are accepted already and the status says done
            case _:
                raise TypeError(f"unknown box pipeline effect {effect!r}")
    if accepted:
        for hook in list(_accepted_hooks):
            hook(job, accepted)


def _ask(job: BoxJob, kind: str, box_id: int | None, box_ids, exclude) -> None:
    # The quality question shows the accepted boxes too, so a verifier can see a box that repeats one of them.
    shown = tuple(b for b in box_ids if b != box_id)
    question = BinaryQuestion(
        kind=kind,
        job_id=job.pk,
        dataset_id=job.dataset_id,
        image_id=job.image_id,
        concept_id=job.concept_id,
        box_id=box_id,
        box_ids=shown,
        exclude_workers=tuple(sorted(set(exclude))),
        text=text_for(kind, job.concept.name),
    )
    # The deployment's choice of rule, read as the job asks: the calibrated consensus rule or the fixed one.
    if questions.backend_chosen() == questions.CONSENSUS:
        questions.box_question_ask(question)
    else:
        fixed_questions.ask(question)


# --- reads for organizers -----------------------------------------------------------------------------------


def status_counts(dataset: Dataset, concept=None) -> dict[str, int]:
    """Jobs per status (every status present, zeros included)."""
    from django.db.models import Count

    qs = BoxJob.objects.filter(dataset=dataset)
    if concept is not None:
        qs = qs.filter(concept=concept)
    counts = dict.fromkeys(BoxJobStatus.values, 0)
    counts.update({row["status"]: row["n"] for row in qs.values("status").annotate(n=Count("id"))})
    return counts


def open_tasks(job: BoxJob):
    return Task.objects.filter(payload__job=job.pk).exclude(state__in=[TaskState.DONE, TaskState.CANCELLED])
