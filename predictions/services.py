"""Importing a model's predictions into a dataset: the rows are checked against the dataset's images and classes
(predictions/rows.py), then stored as one prediction set in one transaction, or nothing is stored."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from typing import Any

from django.db import IntegrityError, transaction

from annotation.audit import audit_record
from annotation.models import Dataset, Image
from hierarchy.models import Concept

from . import rows
from .models import BoxPrediction, ClassScore, PredictionSet, PredictionSource

BATCH = 5000
# Names per lookup query: SQLite refuses statements with more than 250,000 (older builds: 999) parameters.
LOOKUP_CHUNK = 900


def content_digest(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def push_digest(document: Any) -> str:
    """A pushed JSON document's digest: of its canonical form, so key order and spacing do not matter."""
    return content_digest(json.dumps(document, sort_keys=True, separators=(",", ":"), allow_nan=True))


def _chunks(values: set, size: int = LOOKUP_CHUNK):
    ordered = sorted(values)
    for start in range(0, len(ordered), size):
        yield ordered[start : start + size]


def catalog_for(dataset: Dataset, refs: rows.References) -> rows.Catalog:
    """The dataset's images and classes the rows name, a few queries per LOOKUP_CHUNK names whatever the number
    of rows. A class must be one of the dataset's classes; a dataset that has picked none accepts every concept
    of the hierarchy."""
    images = Image.objects.filter(dataset=dataset)
    sizes: dict[int, tuple[int, int]] = {}
    by_name: dict[str, list[int]] = defaultdict(list)
    for ids in _chunks(refs.image_ids):
        for pk, width, height in images.filter(pk__in=ids).values_list("pk", "width", "height"):
            sizes[pk] = (width, height)
    for names in _chunks(refs.file_names):
        named = images.filter(original_name__in=names).order_by("pk")
        for pk, name, width, height in named.values_list("pk", "original_name", "width", "height"):
            sizes[pk] = (width, height)
            by_name[name].append(pk)
    concepts = dataset.concepts.all() if dataset.concepts.exists() else Concept.objects.all()
    by_id: dict[int, int] = {}
    by_wnid: dict[str, int] = {}
    for ids in _chunks(refs.category_ids):
        by_id.update(concepts.filter(pk__in=ids).values_list("pk", "pk"))
    for wnids in _chunks(refs.wnids):
        by_wnid.update(concepts.filter(wnid__in=wnids).values_list("wnid", "pk"))
    return rows.Catalog(sizes, dict(by_name), by_id, by_wnid)


def prediction_set_import(
    *,
    dataset: Dataset,
    document: rows.Document,
    sha256: str,
    source: str,
    actor=None,
    name: str = "",
    model_name: str = "",
    model_version: str = "",
) -> tuple[PredictionSet, bool]:
    """Store a parsed document as a prediction set: (the set, True), or (the set stored earlier from the same
    content, False). PredictionsRefused naming every bad row, and then nothing is stored."""
    existing = PredictionSet.objects.filter(dataset=dataset, sha256=sha256).first()
    if existing is not None:
        return existing, False
    checked = rows.predictions_validate(document, catalog_for(dataset, rows.references(document)))
    model_name = model_name or document.model_name
    model_version = model_version or document.model_version
    name = (name or document.name or " ".join(filter(None, [model_name, model_version])) or "predictions")[
        :200
    ]
    try:
        with transaction.atomic():
            prediction_set = PredictionSet.objects.create(
                dataset=dataset,
                name=name,
                model_name=model_name[:200],
                model_version=model_version[:100],
                source=source,
                created_by=actor,
                sha256=sha256,
                box_count=len(checked.boxes),
                score_count=len(checked.scores),
            )
            BoxPrediction.objects.bulk_create(
                (
                    BoxPrediction(
                        prediction_set=prediction_set,
                        image_id=b.image_id,
                        concept_id=b.concept_id,
                        x1=b.x1,
                        y1=b.y1,
                        x2=b.x2,
                        y2=b.y2,
                        score=b.score,
                    )
                    for b in checked.boxes
                ),
                batch_size=BATCH,
            )
            ClassScore.objects.bulk_create(
                (
                    ClassScore(
                        prediction_set=prediction_set,
                        image_id=s.image_id,
                        concept_id=s.concept_id,
                        score=s.score,
                    )
                    for s in checked.scores
                ),
                batch_size=BATCH,
            )
            if actor is not None:
                audit_record(
                    dataset=dataset,
                    actor=actor,
                    action="predictions.import",
                    parameters={
                        "name": name,
                        "model": model_name,
                        "version": model_version,
                        "source": source,
                    },
                    result={
                        "prediction_set": prediction_set.pk,
                        "boxes": len(checked.boxes),
                        "scores": len(checked.scores),
                    },
                )
    except IntegrityError:
        # The same content imported at the same moment by another request: answer that one's set.
        existing = PredictionSet.objects.filter(dataset=dataset, sha256=sha256).first()
        if existing is None:
            raise
        return existing, False
    return prediction_set, True


def prediction_file_import(
    *, dataset: Dataset, data: bytes, source: str = PredictionSource.UPLOAD, actor=None, **names: str
) -> tuple[PredictionSet, bool]:
    """A predictions file (bytes as uploaded): the same content imported again answers the first set, unparsed."""
    sha256 = content_digest(data)
    existing = PredictionSet.objects.filter(dataset=dataset, sha256=sha256).first()
    if existing is not None:
        return existing, False
    return prediction_set_import(
        dataset=dataset,
        document=rows.document_parse(data),
        sha256=sha256,
        source=source,
        actor=actor,
        **names,
    )
