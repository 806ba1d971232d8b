"""Reading and validating a model's predictions for a dataset (COCO results boxes and image-level class scores),
refusing every bad row with its place, a named error code and the reason, so the whole file can be fixed at once.
Pure: the caller looks up the images and classes the rows name (`references`) and passes them in a `Catalog`."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_ROWS = (
    200_000  # boxes and class scores together, per file or push: stored within one request (~6 s per 100,000)
)
MAX_LISTED = 50  # problems quoted in the message; all of them stay on the exception
MAX_ID = 2**63 - 1  # a larger id names no row (and no PostgreSQL bigint could hold it)
TOP_KEYS = frozenset({"name", "model", "detections", "classifications"})


class Code:
    """The named errors a row (or the whole file) is refused with."""

    BAD_FILE = "bad_file"  # not JSON, not a list or an object of the documented shape
    TOO_MANY_ROWS = "too_many_rows"
    BAD_ROW = "bad_row"  # not an object, a missing key, a value of the wrong type
    UNKNOWN_IMAGE = "unknown_image"
    AMBIGUOUS_IMAGE = "ambiguous_image"  # a file name several images of the dataset were uploaded with
    UNKNOWN_CLASS = "unknown_class"
    NON_FINITE = "non_finite"  # NaN, Infinity or a number too large for a float
    BAD_BOX = "bad_box"  # width or height not positive
    OUTSIDE_IMAGE = "outside_image"
    BAD_SCORE = "bad_score"  # outside [0, 1]
    DUPLICATE = "duplicate"


@dataclass(frozen=True)
class Problem:
    where: str  # "detections[3]" (0-based index in its list) or "file"
    code: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.code}: {self.reason}"


class PredictionsRefused(ValueError):
    """A predictions file or push with at least one bad row; ``problems`` lists them all, and nothing is stored."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        shown = "\n".join(str(p) for p in problems[:MAX_LISTED])
        more = f"\n... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
        super().__init__(f"{len(problems)} problem(s) in the predictions; nothing was stored:\n{shown}{more}")


@dataclass(frozen=True)
class Document:
    """The parsed file: its rows still unchecked, and the optional set name and model it names."""

    detections: list[Any]
    classifications: list[Any]
    name: str = ""
    model_name: str = ""
    model_version: str = ""


@dataclass(frozen=True)
class References:
    """What the rows name, to be looked up in the dataset (well-formed values only)."""

    image_ids: set[int] = field(default_factory=set)
    file_names: set[str] = field(default_factory=set)
    category_ids: set[int] = field(default_factory=set)
    wnids: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Catalog:
    """The dataset's images and classes the rows may name: image id -> (width, height), file name -> image
    ids uploaded with it, category id (the concept's id, as the platform's COCO export writes it) and wnid ->
    concept id."""

    image_sizes: Mapping[int, tuple[int, int]]
    images_by_name: Mapping[str, list[int]]
    concepts_by_id: Mapping[int, int]
    concepts_by_wnid: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class BoxRow:
    """A box proposal in original-image pixels: 0 <= x1 < x2 <= width, 0 <= y1 < y2 <= height."""

    image_id: int
    concept_id: int
    x1: float
    y1: float
    x2: float
    y2: float
    score: float


@dataclass(frozen=True, slots=True)
class ScoreRow:
    image_id: int
    concept_id: int
    score: float


@dataclass(frozen=True)
class Predictions:
    boxes: list[BoxRow]
    scores: list[ScoreRow]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(value: Any, limit: int) -> str:
    return value.strip()[:limit] if _usable(value) else ""


def document_parse(data: str | bytes) -> Document:
    """Parse a predictions file: a COCO results list (boxes only) or an object with ``detections`` and/or
    ``classifications`` lists and an optional ``name`` and ``model: {name, version}``."""
    try:
        # NaN and Infinity decode (as Python's json does), so that the row holding them is named below.
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        where = f"line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else "file"
        raise PredictionsRefused([Problem(where, Code.BAD_FILE, f"invalid JSON: {exc}")]) from None
    return document_from(doc)


def document_from(doc: Any) -> Document:
    """The same checks on an already decoded document (a model server's JSON push)."""
    if isinstance(doc, list):
        return Document(detections=doc, classifications=[])
    if not isinstance(doc, dict):
        raise PredictionsRefused(
            [Problem("file", Code.BAD_FILE, "expected a COCO results list or an object with `detections`")]
        )
    problems = [
        Problem("file", Code.BAD_FILE, f"unknown key {key!r}; known: {', '.join(sorted(TOP_KEYS))}")
        for key in sorted(set(doc) - TOP_KEYS, key=str)
    ]
    lists = {}
    for key in ("detections", "classifications"):
        value = doc.get(key, [])
        if not isinstance(value, list):
            problems.append(Problem(key, Code.BAD_FILE, f"must be a list, got {type(value).__name__}"))
        lists[key] = value if isinstance(value, list) else []
    if "detections" not in doc and "classifications" not in doc:
        problems.append(Problem("file", Code.BAD_FILE, "holds neither `detections` nor `classifications`"))
    model = doc.get("model", {})
    if not isinstance(model, dict):
        problems.append(Problem("model", Code.BAD_FILE, "must be an object {name, version}"))
        model = {}
    if problems:
        raise PredictionsRefused(problems)
    return Document(
        detections=lists["detections"],
        classifications=lists["classifications"],
        name=_text(doc.get("name"), 200),
        model_name=_text(model.get("name"), 200),
        model_version=_text(model.get("version"), 100),
    )


def _rows(document: Document):
    for key in ("detections", "classifications"):
        for index, row in enumerate(getattr(document, key)):
            yield f"{key}[{index}]", key, row


def _usable(text: Any) -> bool:
    """A non-empty string a database column can hold (no NUL character, no lone surrogate)."""
    if not isinstance(text, str) or not text or "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def references(document: Document) -> References:
    """The image ids, file names, category ids and wnids the rows name, for the caller to look up."""
    refs = References()
    for _where, _key, row in _rows(document):
        if not isinstance(row, dict):
            continue
        image_id: Any = row.get("image_id")
        file_name: Any = row.get("file_name")
        category_id: Any = row.get("category_id")
        wnid: Any = row.get("wnid")
        if _is_int(image_id) and 0 < image_id <= MAX_ID:
            refs.image_ids.add(image_id)
        if _usable(file_name):
            refs.file_names.add(file_name)
        if _is_int(category_id) and 0 < category_id <= MAX_ID:
            refs.category_ids.add(category_id)
        if _usable(wnid):
            refs.wnids.add(wnid)
    return refs


def _image(row: dict, catalog: Catalog) -> tuple[int | None, Problem | None]:
    """The image a row names by ``image_id`` or ``file_name`` (both: they must agree), or why none."""
    image_id, file_name = row.get("image_id"), row.get("file_name")
    if image_id is None and file_name is None:
        return None, Problem("", Code.BAD_ROW, "names no image: give `image_id` or `file_name`")
    by_id = by_name = None
    if image_id is not None:
        if not _is_int(image_id):
            return None, Problem("", Code.BAD_ROW, f"image_id must be an integer, got {image_id!r}")
        if image_id not in catalog.image_sizes:
            return None, Problem("", Code.UNKNOWN_IMAGE, f"no image with image_id {image_id} in this dataset")
        by_id = image_id
    if file_name is not None:
        if not isinstance(file_name, str):
            return None, Problem("", Code.BAD_ROW, f"file_name must be a string, got {file_name!r}")
        ids = catalog.images_by_name.get(file_name, [])
        if not ids:
            return None, Problem(
                "", Code.UNKNOWN_IMAGE, f"no image uploaded as {file_name!r} in this dataset"
            )
        if by_id is None and len(ids) > 1:
            shown = ", ".join(str(i) for i in sorted(ids)[:5])
            return None, Problem(
                "",
                Code.AMBIGUOUS_IMAGE,
                f"{len(ids)} images were uploaded as {file_name!r} ({shown}); give image_id",
            )
        if by_id is not None and by_id not in ids:
            return None, Problem(
                "",
                Code.UNKNOWN_IMAGE,
                f"image {by_id} was not uploaded as {file_name!r}: they name different images",
            )
        by_name = ids[0]
    return (by_id if by_id is not None else by_name), None


def _concept(row: dict, catalog: Catalog) -> tuple[int | None, Problem | None]:
    """The class a row names by ``category_id`` or ``wnid`` (both: they must agree), or why none."""
    category_id, wnid = row.get("category_id"), row.get("wnid")
    if category_id is None and wnid is None:
        return None, Problem("", Code.BAD_ROW, "names no class: give `category_id` or `wnid`")
    found = []
    if category_id is not None:
        if not _is_int(category_id):
            return None, Problem("", Code.BAD_ROW, f"category_id must be an integer, got {category_id!r}")
        if category_id not in catalog.concepts_by_id:
            return None, Problem(
                "", Code.UNKNOWN_CLASS, f"no class with category_id {category_id} in this dataset"
            )
        found.append(catalog.concepts_by_id[category_id])
    if wnid is not None:
        if not isinstance(wnid, str):
            return None, Problem("", Code.BAD_ROW, f"wnid must be a string, got {wnid!r}")
        if wnid not in catalog.concepts_by_wnid:
            return None, Problem("", Code.UNKNOWN_CLASS, f"no class with wnid {wnid!r} in this dataset")
        found.append(catalog.concepts_by_wnid[wnid])
    if len(set(found)) > 1:
        return None, Problem(
            "", Code.UNKNOWN_CLASS, f"category_id {category_id} and wnid {wnid!r} name different classes"
        )
    return found[0], None


def _score(row: dict) -> tuple[float | None, Problem | None]:
    if "score" not in row:
        return None, Problem("", Code.BAD_ROW, "missing key 'score'")
    score = row["score"]
    if not _is_number(score):
        return None, Problem("", Code.BAD_ROW, f"score must be a number, got {score!r}")
    if not math.isfinite(score):
        return None, Problem("", Code.NON_FINITE, f"score must be a finite number, got {score!r}")
    if not 0 <= score <= 1:
        return None, Problem("", Code.BAD_SCORE, f"score must lie in [0, 1], got {score:g}")
    return float(score), None


def _box(
    row: dict, size: tuple[int, int] | None
) -> tuple[tuple[float, float, float, float] | None, Problem | None]:
    """COCO's [x, y, w, h] as corners (x1, y1, x2, y2) in original-image pixels, inside the image."""
    if "bbox" not in row:
        return None, Problem("", Code.BAD_ROW, "missing key 'bbox'")
    bbox = row["bbox"]
    if not isinstance(bbox, list) or len(bbox) != 4 or not all(_is_number(v) for v in bbox):
        return None, Problem("", Code.BAD_ROW, f"bbox must be a list of 4 numbers [x, y, w, h], got {bbox!r}")
    if not all(math.isfinite(v) for v in bbox):
        return None, Problem("", Code.NON_FINITE, f"bbox has a non-finite number: {bbox!r}")
    x, y, w, h = (float(v) for v in bbox)
    if w <= 0 or h <= 0:
        return None, Problem(
            "", Code.BAD_BOX, f"bbox width and height must be positive, got w={w:g}, h={h:g}"
        )
    x1, y1, x2, y2 = x, y, x + w, y + h
    if size is not None:
        width, height = size
        if x1 < 0 or y1 < 0 or x2 > width or y2 > height:
            return None, Problem(
                "",
                Code.OUTSIDE_IMAGE,
                f"box ({x1:g}, {y1:g}, {x2:g}, {y2:g}) reaches outside the image (0, 0, {width}, {height})",
            )
    return (x1, y1, x2, y2), None


def predictions_validate(document: Document, catalog: Catalog) -> Predictions:
    """Check every row; PredictionsRefused with all problems, or the rows ready to store."""
    total = len(document.detections) + len(document.classifications)
    if total > MAX_ROWS:
        raise PredictionsRefused(
            [Problem("file", Code.TOO_MANY_ROWS, f"{total:,} rows, more than {MAX_ROWS:,}; split the file")]
        )
    problems: list[Problem] = []
    boxes: list[BoxRow] = []
    scores: list[ScoreRow] = []
    seen_boxes: dict[tuple, str] = {}
    seen_scores: dict[tuple[int, int], str] = {}
    for where, key, row in _rows(document):
        if not isinstance(row, dict):
            problems.append(Problem(where, Code.BAD_ROW, f"expected an object, got {type(row).__name__}"))
            continue
        image_id, image_problem = _image(row, catalog)
        concept_id, concept_problem = _concept(row, catalog)
        score, score_problem = _score(row)
        corners, box_problem = (None, None)
        if key == "detections":
            size = catalog.image_sizes.get(image_id) if image_id is not None else None
            corners, box_problem = _box(row, size)
        found = [p for p in (image_problem, concept_problem, box_problem, score_problem) if p is not None]
        problems.extend(Problem(where, p.code, p.reason) for p in found)
        if found or image_id is None or concept_id is None or score is None:
            continue
        if key == "detections":
            assert corners is not None
            box_key = (image_id, concept_id, *corners)
            if box_key in seen_boxes:
                problems.append(Problem(where, Code.DUPLICATE, f"the same box as {seen_boxes[box_key]}"))
                continue
            seen_boxes[box_key] = where
            boxes.append(BoxRow(image_id, concept_id, *corners, score))
        else:
            pair = (image_id, concept_id)
            if pair in seen_scores:
                problems.append(
                    Problem(
                        where,
                        Code.DUPLICATE,
                        f"a second score for this image and class ({seen_scores[pair]})",
                    )
                )
                continue
            seen_scores[pair] = where
            scores.append(ScoreRow(image_id, concept_id, score))
    if problems:
        raise PredictionsRefused(problems)
    if not boxes and not scores:
        raise PredictionsRefused([Problem("file", Code.BAD_FILE, "no predictions in the file")])
    return Predictions(boxes, scores)
