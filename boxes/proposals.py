"""Box jobs started from a model's prediction set (docs/boxes.md, "Starting from a model's proposals"): per class,
the proposals scoring at or above the organizer's threshold enter the box pipeline as QUALITY questions, decided
by the same consensus as drawn boxes; accepted ones become boxes of provenance `model+verified`, rejected ones
are dropped, and COVERAGE then DRAW box what the model missed. Proposals are verified, never trusted."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from annotation import pipeline
from annotation.audit import audit_record
from annotation.models import Image
from predictions.calibration import threshold_suggestion
from predictions.models import BoxPrediction, PredictionSet
from predictions.thresholds import Suggestion

from . import services

WHERE = ("verified", "proposed", "all")


class NoImages(ValueError):
    """A class has no image to box under the chosen `where`."""


@dataclass(frozen=True)
class ClassRequest:
    concept: object  # hierarchy.Concept
    threshold: float


@dataclass(frozen=True)
class ClassStart:
    concept: object
    threshold: float
    images: int  # images chosen for the class
    created: int  # jobs started now
    existing: int  # images that had a job for the class already: left alone, no proposal stored
    proposals_queued: int  # proposals asked QUALITY in the new jobs
    proposals_below_threshold: int  # on the chosen images, never asked
    proposals_over_cap: int  # above the threshold but beyond a job's max_boxes (the lowest scores)
    jobs_without_proposals: int  # new jobs that start with a DRAW
    suggestion: Suggestion


def _proposals_by_image(
    prediction_set: PredictionSet, concept, threshold: float
) -> dict[int, list[services.Proposal]]:
    """The set's proposals of `concept` at or above `threshold`, per image, highest score first."""
    rows = BoxPrediction.objects.filter(
        prediction_set=prediction_set, concept=concept, score__gte=threshold
    ).order_by("image_id", "-score", "id")
    found: dict[int, list[services.Proposal]] = defaultdict(list)
    for image_id, x1, y1, x2, y2, score in rows.values_list("image_id", "x1", "y1", "x2", "y2", "score"):
        found[image_id].append(services.Proposal(x1, y1, x2, y2, score))
    return found


def _images_for(
    prediction_set: PredictionSet, concept, where: str, images: list[Image] | None, proposed: set[int]
) -> list[Image]:
    dataset = prediction_set.dataset
    if images is not None:
        return images
    if where == "verified":
        return services.images_verified_present(dataset, concept)
    if where == "proposed":
        return [image for image in dataset.images.order_by("id") if image.pk in proposed]
    return list(dataset.images.order_by("id"))


def box_jobs_start_from_predictions(
    *,
    prediction_set: PredictionSet,
    classes: Sequence[ClassRequest],
    where: str = "verified",
    images: list[Image] | None = None,
    max_boxes: int = pipeline.DEFAULT_MAX_BOXES,
    max_rounds: int = pipeline.DEFAULT_MAX_ROUNDS,
    actor=None,
    parameters: dict | None = None,
) -> list[ClassStart]:
    """Start a box job per chosen image and class, seeded with the set's proposals above the class's threshold
    (at most `max_boxes` per job, highest scores first); an image without any starts with a DRAW. Images are
    `images` if given, else by `where`: `verified` (final label present), `proposed` (a proposal at or above
    the threshold) or `all`. Idempotent: an (image, class) with a job already is left alone. Raises NoImages
    (nothing started) when a class has no image to box. Records a `boxes.start_from_predictions` audit entry
    when `actor` is given. One transaction."""
    if where not in WHERE:
        raise ValueError(f"where must be one of {', '.join(WHERE)}")
    plans = []
    for request in classes:
        proposed = _proposals_by_image(prediction_set, request.concept, request.threshold)
        chosen = _images_for(prediction_set, request.concept, where, images, set(proposed))
        if not chosen:
            concept = request.concept
            raise NoImages(
                f"no image to box for {concept.wnid} ({concept.name}) with where={where!r}: "
                + (
                    "no image of this dataset is verified to show it yet; verify the class first, name the "
                    'images, or use "proposed" or "all"'
                    if where == "verified"
                    else f"no proposal scores {request.threshold:g} or more"
                )
            )
        # Read before any job starts: the calibration is what was verified before this request.
        plans.append((request, proposed, chosen, threshold_suggestion(prediction_set, request.concept.pk)))
    started = []
    with transaction.atomic():
        for request, proposed, chosen, suggestion in plans:
            created = queued = over_cap = bare = 0
            for image in chosen:
                seeds = proposed.get(image.pk, [])
                _, new = services.box_job_start(
                    image=image,
                    concept=request.concept,
                    max_boxes=max_boxes,
                    max_rounds=max_rounds,
                    proposals=seeds[:max_boxes],
                )
                if new:
                    created += 1
                    queued += len(seeds[:max_boxes])
                    over_cap += max(len(seeds) - max_boxes, 0)
                    bare += not seeds
            chosen_ids = {image.pk for image in chosen}
            below = BoxPrediction.objects.filter(
                prediction_set=prediction_set, concept=request.concept, score__lt=request.threshold
            )
            below_count = sum(image_id in chosen_ids for image_id in below.values_list("image_id", flat=True))
            started.append(
                ClassStart(
                    concept=request.concept,
                    threshold=request.threshold,
                    images=len(chosen),
                    created=created,
                    existing=len(chosen) - created,
                    proposals_queued=queued,
                    proposals_below_threshold=below_count,
                    proposals_over_cap=over_cap,
                    jobs_without_proposals=bare,
                    suggestion=suggestion,
                )
            )
        if actor is not None:
            audit_record(
                dataset=prediction_set.dataset,
                actor=actor,
                action="boxes.start_from_predictions",
                parameters=parameters or {},
                result={
                    "prediction_set": prediction_set.pk,
                    "classes": {
                        s.concept.wnid: {
                            "created": s.created,
                            "existing": s.existing,
                            "proposals_queued": s.proposals_queued,
                        }
                        for s in started
                    },
                },
            )
    return started
