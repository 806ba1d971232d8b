"""Reading and validating submissions: COCO results JSON and ILSVRC text files, refusing every malformed entry
with its entry/line number and the reason, so a team can fix the whole file at once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .data import Detections, TopKPredictions

MAX_LISTED = 50  # problems quoted in the message; all of them stay on the exception
COCO_KEYS = ("image_id", "category_id", "bbox", "score")


@dataclass(frozen=True)
class Problem:
    where: str  # "entry 3" (0-based index in the JSON list) or "line 7" (1-based)
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


class SubmissionError(ValueError):
    """A submission with at least one malformed entry; ``problems`` lists them all."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        shown = "\n".join(str(p) for p in problems[:MAX_LISTED])
        more = f"\n... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
        super().__init__(f"{len(problems)} problem(s) in the submission:\n{shown}{more}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _border(
    x1: float, y1: float, x2: float, y2: float, size: tuple[float, float] | None
) -> tuple[bool, bool]:
    """Whether the box reaches past the image's border, and whether it lies wholly outside it.

    Only counted, never changed: pycocotools (``loadRes``, ``computeIoU``), VOCdevkit and the ILSVRC devkit
    score every box as submitted, negative coordinates included, and so do we. A box wholly outside the
    image is scored too (it can only be a false positive against truth inside the image).
    """
    if size is None:
        return False, False
    width, height = size
    past = x1 < 0 or y1 < 0 or x2 > width or y2 > height
    outside = x1 >= width or y1 >= height or x2 <= 0 or y2 <= 0
    return past or outside, outside


def validate_coco_results(
    results: Any,
    image_ids: Collection[int] | None = None,
    category_ids: Collection[int] | None = None,
    image_sizes: Mapping[int, tuple[float, float]] | None = None,
) -> Detections:
    """Check a COCO results list (``[{image_id, category_id, bbox: [x, y, w, h], score}, ...]``).

    Unknown ids are checked when ``image_ids``/``category_ids`` are given. Every box with finite numbers and a
    positive width and height is kept as given, as pycocotools' ``loadRes`` keeps it; when the image's
    (width, height) is known, boxes reaching past the border (and those wholly outside) are counted in
    ``Detections.past_border`` (``Detections.outside``).
    """
    if not isinstance(results, list):
        raise SubmissionError([Problem("file", "a COCO results file holds a JSON list of detections")])
    images = None if image_ids is None else set(image_ids)
    categories = None if category_ids is None else set(category_ids)
    problems: list[Problem] = []
    past_border = outside = 0
    for index, entry in enumerate(results):
        where = f"entry {index}"
        if not isinstance(entry, dict):
            problems.append(Problem(where, f"expected an object, got {type(entry).__name__}"))
            continue
        missing = [k for k in COCO_KEYS if k not in entry]
        if missing:
            problems.append(Problem(where, "missing key(s) " + ", ".join(repr(k) for k in missing)))
            continue
        image, category, bbox, score = (entry[k] for k in COCO_KEYS)
        if not _is_int(image):
            problems.append(Problem(where, f"image_id must be an integer, got {image!r}"))
        elif images is not None and image not in images:
            problems.append(Problem(where, f"unknown image_id {image}"))
        if not _is_int(category):
            problems.append(Problem(where, f"category_id must be an integer, got {category!r}"))
        elif categories is not None and category not in categories:
            problems.append(Problem(where, f"unknown category_id {category}"))
        if not _is_number(score) or not math.isfinite(score):
            problems.append(Problem(where, f"score must be a finite number, got {score!r}"))
        if not isinstance(bbox, list) or len(bbox) != 4 or not all(_is_number(v) for v in bbox):
            problems.append(Problem(where, f"bbox must be a list of 4 numbers [x, y, w, h], got {bbox!r}"))
            continue
        if not all(math.isfinite(v) for v in bbox):
            problems.append(Problem(where, f"bbox has a non-finite number: {bbox!r}"))
            continue
        x, y, w, h = bbox
        if w <= 0 or h <= 0:
            problems.append(Problem(where, f"bbox width and height must be positive, got w={w:g}, h={h:g}"))
            continue
        size = image_sizes.get(image) if image_sizes is not None and _is_int(image) else None
        past, out = _border(x, y, x + w, y + h, size)
        past_border += past
        outside += out
    if problems:
        raise SubmissionError(problems)
    n = len(results)
    return Detections(
        np.fromiter((r["image_id"] for r in results), np.int64, n),
        np.fromiter((r["category_id"] for r in results), np.int64, n),
        np.array([r["bbox"] for r in results], dtype=np.float64).reshape(-1, 4),
        np.fromiter((r["score"] for r in results), np.float64, n),
        past_border=past_border,
        outside=outside,
    )


def parse_coco_results(text: str | bytes, **checks: Any) -> Detections:
    """Parse and validate a COCO results JSON document; a syntax error is reported with its line."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SubmissionError(
            [Problem(f"line {exc.lineno}", f"invalid JSON: {exc.msg} (column {exc.colno})")]
        ) from None
    return validate_coco_results(data, **checks)


# --- ILSVRC text formats --------------------------------------------------------------------------------------


def _numbered(lines: str | Iterable[str]) -> Iterable[tuple[int, list[str]]]:
    source = lines.splitlines() if isinstance(lines, str) else lines
    for number, line in enumerate(source, start=1):
        fields = line.split()
        if fields:  # blank lines carry nothing
            yield number, fields


def _parse_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _parse_float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_ilsvrc_cls(
    lines: str | Iterable[str],
    image_ids: Collection[int] | None = None,
    labels: Collection[int] | None = None,
    max_guesses: int = 5,
) -> TopKPredictions:
    """Classification submission: ``image_id label1 ... label5`` per line (1 to 5 labels, best first)."""
    return _read_topk(lines, image_ids, labels, max_guesses, with_boxes=False, image_sizes=None)


def read_ilsvrc_loc(
    lines: str | Iterable[str],
    image_ids: Collection[int] | None = None,
    labels: Collection[int] | None = None,
    image_sizes: Mapping[int, tuple[float, float]] | None = None,
    max_guesses: int = 5,
) -> TopKPredictions:
    """Localization submission: ``image_id label x1 y1 x2 y2 [label x1 y1 x2 y2 ...]`` (up to 5 guesses).

    Corners are inclusive pixel coordinates (ILSVRC devkit); evaluate with ``pixel_inclusive`` truth. Boxes
    are scored as given, as the devkit scores them; those past the border are counted
    (``TopKPredictions.past_border``, ``.outside``).
    """
    return _read_topk(lines, image_ids, labels, max_guesses, True, image_sizes)


def _read_topk(
    lines: str | Iterable[str],
    image_ids: Collection[int] | None,
    labels: Collection[int] | None,
    max_guesses: int,
    with_boxes: bool,
    image_sizes: Mapping[int, tuple[float, float]] | None,
) -> TopKPredictions:
    images = None if image_ids is None else set(image_ids)
    known_labels = None if labels is None else set(labels)
    width = 5 if with_boxes else 1
    problems: list[Problem] = []
    seen: dict[int, int] = {}
    rows: list[tuple[int, list[int], list[list[float]]]] = []
    past_border = outside = 0
    for number, fields in _numbered(lines):
        where = f"line {number}"
        rest = fields[1:]
        shape = "image_id label x1 y1 x2 y2 ..." if with_boxes else "image_id label1 ... label5"
        if not rest or len(rest) % width or len(rest) // width > max_guesses:
            problems.append(
                Problem(
                    where, f"expected '{shape}' with 1 to {max_guesses} guesses, got {len(fields)} fields"
                )
            )
            continue
        image = _parse_int(fields[0])
        if image is None:
            problems.append(Problem(where, f"image_id must be an integer, got {fields[0]!r}"))
            continue
        if images is not None and image not in images:
            problems.append(Problem(where, f"unknown image_id {image}"))
        if image in seen:
            problems.append(Problem(where, f"image_id {image} already given on line {seen[image]}"))
        seen.setdefault(image, number)
        guess_labels: list[int] = []
        guess_boxes: list[list[float]] = []
        ok = True
        for g in range(len(rest) // width):
            chunk = rest[g * width : (g + 1) * width]
            label = _parse_int(chunk[0])
            if label is None:
                problems.append(Problem(where, f"label must be an integer, got {chunk[0]!r}"))
                ok = False
                continue
            if known_labels is not None and label not in known_labels:
                problems.append(Problem(where, f"unknown label {label}"))
                ok = False
            guess_labels.append(label)
            if with_boxes:
                coords = [_parse_float(v) for v in chunk[1:]]
                if any(c is None for c in coords):
                    problems.append(
                        Problem(where, f"box coordinates must be finite numbers, got {chunk[1:]}")
                    )
                    ok = False
                    continue
                x1, y1, x2, y2 = (float(c) for c in coords if c is not None)
                if x2 < x1 or y2 < y1:
                    problems.append(Problem(where, f"box must have x1 <= x2 and y1 <= y2, got {chunk[1:]}"))
                    ok = False
                    continue
                size = image_sizes.get(image) if image_sizes is not None else None
                past, out = _border(x1, y1, x2, y2, size)
                past_border += past
                outside += out
                guess_boxes.append([x1, y1, x2 - x1, y2 - y1])
        if ok:
            rows.append((image, guess_labels, guess_boxes))
    if problems:
        raise SubmissionError(problems)
    labels_arr = np.full((len(rows), max_guesses), -1, dtype=np.int64)
    boxes_arr = np.zeros((len(rows), max_guesses, 4))
    for r, (_, guess_labels, guess_boxes) in enumerate(rows):
        labels_arr[r, : len(guess_labels)] = guess_labels
        if guess_boxes:
            boxes_arr[r, : len(guess_boxes)] = guess_boxes
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    return TopKPredictions(
        ids, labels_arr, boxes_arr if with_boxes else None, past_border=past_border, outside=outside
    )


def read_ilsvrc_det(
    lines: str | Iterable[str],
    image_ids: Collection[int] | None = None,
    labels: Collection[int] | None = None,
    image_sizes: Mapping[int, tuple[float, float]] | None = None,
) -> Detections:
    """Detection submission: ``image_id class_id score x1 y1 x2 y2`` per line.

    Corners are inclusive pixel coordinates (ILSVRC devkit), stored as ``[x1, y1, x2 - x1, y2 - y1]``;
    evaluate against truth read with ``pixel_inclusive=True`` so a box spans ``x2 - x1 + 1`` pixels. Boxes
    are scored as given, as the devkit scores them; those past the border are counted
    (``Detections.past_border``, ``.outside``).
    """
    images = None if image_ids is None else set(image_ids)
    known_labels = None if labels is None else set(labels)
    problems: list[Problem] = []
    out: list[tuple[int, int, float, float, float, float, float]] = []
    past_border = outside = 0
    for number, fields in _numbered(lines):
        where = f"line {number}"
        if len(fields) != 7:
            problems.append(
                Problem(
                    where, f"expected 'image_id class_id score x1 y1 x2 y2' (7 fields), got {len(fields)}"
                )
            )
            continue
        image, label = _parse_int(fields[0]), _parse_int(fields[1])
        numbers = [_parse_float(v) for v in fields[2:]]
        bad = False
        if image is None:
            problems.append(Problem(where, f"image_id must be an integer, got {fields[0]!r}"))
            bad = True
        elif images is not None and image not in images:
            problems.append(Problem(where, f"unknown image_id {image}"))
            bad = True
        if label is None:
            problems.append(Problem(where, f"class_id must be an integer, got {fields[1]!r}"))
            bad = True
        elif known_labels is not None and label not in known_labels:
            problems.append(Problem(where, f"unknown class_id {label}"))
            bad = True
        if any(v is None for v in numbers):
            problems.append(Problem(where, f"score and coordinates must be finite numbers, got {fields[2:]}"))
            continue
        score, x1, y1, x2, y2 = (float(v) for v in numbers if v is not None)
        if x2 < x1 or y2 < y1:
            problems.append(Problem(where, f"box must have x1 <= x2 and y1 <= y2, got {fields[3:]}"))
            continue
        size = image_sizes.get(image) if image_sizes is not None and image is not None else None
        if not bad and image is not None and label is not None:
            past, out_of_image = _border(x1, y1, x2, y2, size)
            past_border += past
            outside += out_of_image
            out.append((image, label, score, x1, y1, x2 - x1, y2 - y1))
    if problems:
        raise SubmissionError(problems)
    arr = np.array(out, dtype=np.float64).reshape(-1, 7)
    return Detections(
        arr[:, 0].astype(np.int64),
        arr[:, 1].astype(np.int64),
        arr[:, 3:],
        arr[:, 2],
        past_border=past_border,
        outside=outside,
    )
