"""Image verification (ILSVRC §3.1.3): queue "does this image show CONCEPT?" for a dataset's candidate images,
a seeded calibration subset first, and count how far it got. The questions themselves are the engine's
(`consensus.engine`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Count, Sum

from annotation.models import Dataset, Image
from candidates.selectors import pool_exists, pool_images
from hierarchy.models import Concept

from .calibration import calibration_sample_size
from .creation import Target, questions_create
from .estimates import table_in_use
from .models import ConsensusSettings, Question, QuestionKind, QuestionRole, QuestionState


@dataclass(frozen=True)
class VerificationPlan:
    created: int
    calibration: int
    waiting: int
    table_reused: bool
    from_pool: bool = False  # the images came from the concept's candidate pool


def verification_queue(
    *,
    dataset: Dataset,
    concept: Concept,
    images: Sequence[Image] | None = None,
    calibrate: bool | None = None,
) -> VerificationPlan:
    """Queue "does this image show CONCEPT?" for candidate images: by default the concept's candidate pool
    (`candidates`: each pool image's kept copy, the query that found it kept as provenance) when the dataset
    has one for the concept, otherwise all of the dataset's images.

    Calibration (default: only when (image_verify, concept) has no table yet and this dataset has not started
    one): a seeded random subset of the new candidates, `calibration_fraction` of them clamped to
    [calibration_min, calibration_max], each collecting `calibration_votes` votes. `calibrate=True` adds a
    subset even when a table exists, refining it; production then runs on the existing table meanwhile.
    Images that already have the question are skipped, so queuing twice asks nothing twice."""
    kind = QuestionKind.IMAGE_VERIFY
    settings = ConsensusSettings.for_dataset(dataset.pk)
    from_pool = images is None and pool_exists(dataset, concept)
    if from_pool:
        images = pool_images(dataset, concept)
    with transaction.atomic():
        pool = dataset.images.all() if images is None else Image.objects.filter(pk__in=[i.pk for i in images])
        asked = Question.objects.filter(dataset=dataset, kind=kind, concept=concept).values_list("image_id")
        candidates = list(pool.exclude(pk__in=asked).order_by("id"))
        has_table = table_in_use(kind, concept.pk, settings.calibration_min) is not None
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
        from_pool=from_pool,
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
