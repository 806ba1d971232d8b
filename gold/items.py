"""Creating gold items: one at a time (API, admin), from a CSV file (all rows or none), or promoted from a
question whose decision a reviewer confirmed."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from annotation.models import Box, Dataset, Image
from config.queryparams import parse_id
from consensus.models import Question, QuestionKind, QuestionState
from hierarchy.models import Concept

from .models import GoldItem, GoldSource
from .serving import gold_pool_fill
from .tally import gold_items_counted

CSV_COLUMNS = ("kind", "concept", "image", "box", "answer", "explanation")
_TRUE = {"yes", "y", "true", "1"}
_FALSE = {"no", "n", "false", "0"}


class GoldInvalid(ValueError):
    """A gold item that cannot be created; `errors` lists what is wrong (with CSV line numbers on import)."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class GoldSpec:
    kind: str
    concept: Concept
    image: Image
    answer: bool
    box: Box | None = None
    explanation: str = ""


def _check(dataset: Dataset, spec: GoldSpec) -> list[str]:
    errors = []
    if spec.kind not in QuestionKind.values:
        errors.append(f"unknown kind {spec.kind!r}; one of {', '.join(QuestionKind.values)}")
    if spec.image.dataset_id != dataset.pk:
        errors.append(f"image {spec.image.pk} is not in dataset {dataset.name}")
    if spec.box is not None and spec.box.image_id != spec.image.pk:
        errors.append(f"box {spec.box.pk} is not on image {spec.image.pk}")
    needs_box = spec.kind == QuestionKind.BOX_QUALITY
    if needs_box and spec.box is None:
        errors.append("a box_quality gold item needs a box")
    return errors


def gold_items_create(
    *, dataset: Dataset, specs: Iterable[GoldSpec], source: str = GoldSource.ORGANIZER, created_by=None
) -> list[GoldItem]:
    """Create gold items, all or none, each with its pool task (gold.serving.gold_pool_fill): raises
    GoldInvalid listing every bad spec (numbered from 1)."""
    specs = list(specs)
    errors = [f"item {i}: {e}" for i, s in enumerate(specs, 1) for e in _check(dataset, s)]
    if errors:
        raise GoldInvalid(errors)
    try:
        with transaction.atomic():
            items = [
                GoldItem.objects.create(
                    dataset=dataset,
                    kind=s.kind,
                    concept=s.concept,
                    image=s.image,
                    box=s.box,
                    answer=s.answer,
                    explanation=s.explanation,
                    source=source,
                    created_by=created_by,
                )
                for s in specs
            ]
            gold_items_counted(items)
            gold_pool_fill(dataset_id=dataset.pk)
            for item in items:
                item.refresh_from_db(fields=["task"])
            return items
    except IntegrityError:
        raise GoldInvalid(
            ["a gold item with the same kind, concept and image (or box) already exists"]
        ) from None


def gold_items_import_csv(*, dataset: Dataset, text: str, created_by=None) -> list[GoldItem]:
    """Parse and create gold items from CSV text with a header row (columns: kind, concept (wnid), image (id or
    original file name), box (id, optional), answer (yes/no), explanation (optional)). Every row is checked;
    any bad row stores nothing and GoldInvalid lists each problem with its line number."""
    reader = csv.DictReader(io.StringIO(text))
    missing = {"kind", "concept", "image", "answer"} - set(reader.fieldnames or ())
    if missing:
        raise GoldInvalid([f"line 1: missing columns {', '.join(sorted(missing))}"])
    rows = list(reader)
    concepts = {c.wnid: c for c in Concept.objects.filter(wnid__in={r.get("concept", "") for r in rows})}
    images = {str(i.pk): i for i in dataset.images.all()}
    by_name = {i.original_name: i for i in images.values() if i.original_name}
    errors: list[str] = []
    specs: list[GoldSpec] = []
    seen: set[tuple] = set()
    for line, row in enumerate(rows, 2):
        problems = []
        concept = concepts.get((row.get("concept") or "").strip())
        if concept is None:
            problems.append(f"no concept with wnid {row.get('concept')!r}")
        ref = (row.get("image") or "").strip()
        image = images.get(ref) or by_name.get(ref)
        if image is None:
            problems.append(f"no image {ref!r} in dataset {dataset.name}")
        answer_text = (row.get("answer") or "").strip().lower()
        if answer_text not in _TRUE | _FALSE:
            problems.append(f"answer must be yes or no, not {row.get('answer')!r}")
        box = None
        box_ref = (row.get("box") or "").strip()
        if box_ref:
            box = Box.objects.filter(pk=box_id).first() if (box_id := parse_id(box_ref)) is not None else None
            if box is None:
                problems.append(f"no box {box_ref!r}")
        if not problems:
            assert concept is not None and image is not None
            spec = GoldSpec(
                kind=(row.get("kind") or "").strip(),
                concept=concept,
                image=image,
                answer=answer_text in _TRUE,
                box=box,
                explanation=(row.get("explanation") or "").strip()[:300],
            )
            problems = _check(dataset, spec)
            key = (spec.kind, concept.pk, image.pk, box.pk if box else None)
            if key in seen:
                problems.append("the same item appears twice in the file")
            seen.add(key)
            specs.append(spec)
        errors.extend(f"line {line}: {p}" for p in problems)
    if errors:
        raise GoldInvalid(errors)
    return gold_items_create(dataset=dataset, specs=specs, source=GoldSource.IMPORT, created_by=created_by)


def gold_item_promote(*, question: Question, created_by=None) -> GoldItem:
    """Make a decided question (accepted or rejected, as a reviewer confirmed it) a gold item."""
    if question.state not in (QuestionState.ACCEPTED, QuestionState.REJECTED) or question.image_id is None:
        raise GoldInvalid(
            [f"question {question.pk} is {question.state}; only accepted or rejected ones can be gold"]
        )
    spec = GoldSpec(
        kind=question.kind,
        concept=question.concept,
        image=question.image,
        box=question.box,
        answer=question.state == QuestionState.ACCEPTED,
    )
    return gold_items_create(
        dataset=question.dataset, specs=[spec], source=GoldSource.PROMOTED, created_by=created_by
    )[0]
