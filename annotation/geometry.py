"""Box geometry for the box pipeline: validation of drawn boxes, IoU, the 5 px duplicate rule, and greedy
matching of predicted to true boxes for coverage and accuracy measures. Plain numpy, no framework."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

# Coordinates are continuous pixel coordinates in the ORIGINAL image: (x1, y1) is the top-left corner,
# (x2, y2) the bottom-right, 0 <= x1 < x2 <= width. A box covering the whole image is (0, 0, width, height)
# and its area is width * height (no "+1" pixel convention as in the PASCAL devkit).

FloatArray = npt.NDArray[np.float64]

#: Smallest side, in original-image pixels, a drawn box may have. The paper gives no number; 4 px is the
#: smallest box a worker can still see and adjust, and smaller boxes are almost always slips of the mouse.
MIN_BOX_SIDE = 4.0

#: The draw page's duplicate rule (ILSVRC §3.2.1): a new box must differ by at least this many pixels from
#: every existing box of the same synset in the image.
DUPLICATE_MIN_DIFF_PX = 5.0


class BoxError(ValueError):
    """A box that cannot be stored; the message says what is wrong in words a worker or client can act on."""


@dataclass(frozen=True, slots=True)
class Box:
    """An axis-aligned box in continuous original-image pixel coordinates."""

    x1: float
    y1: float
    x2: float
    y2: float

    @property
    def width(self) -> float:
        return self.x2 - self.x1

    @property
    def height(self) -> float:
        return self.y2 - self.y1

    @property
    def area(self) -> float:
        return max(self.width, 0.0) * max(self.height, 0.0)

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.x1, self.y1, self.x2, self.y2)

    def as_array(self) -> FloatArray:
        return np.array(self.as_tuple(), dtype=np.float64)


BoxLike = Box | Sequence[float] | FloatArray


def _as_tuple(box: BoxLike) -> tuple[float, float, float, float]:
    if isinstance(box, Box):
        return box.as_tuple()
    values = [float(v) for v in box]
    if len(values) != 4:
        raise BoxError(f"a box has 4 coordinates (x1, y1, x2, y2), got {len(values)}")
    return (values[0], values[1], values[2], values[3])


def as_boxes(boxes: Iterable[BoxLike] | FloatArray) -> FloatArray:
    """Return `boxes` as a float64 array of shape (N, 4); an empty input gives shape (0, 4)."""
    if isinstance(boxes, np.ndarray):
        arr = boxes.astype(np.float64, copy=False)
    else:
        arr = np.array([_as_tuple(b) for b in boxes], dtype=np.float64)
    if arr.size == 0:
        return np.zeros((0, 4), dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise BoxError(f"expected an array of boxes with shape (N, 4), got shape {arr.shape}")
    return arr


def validate_box(
    x1: float,
    y1: float,
    x2: float,
    y2: float,
    width: float,
    height: float,
    min_size: float = MIN_BOX_SIDE,
) -> Box:
    """Check a drawn box against an image of `width` x `height` pixels and return it as a `Box`.

    Raises `BoxError` for non-finite coordinates, x2 <= x1 or y2 <= y1, any part outside the image, or a side
    shorter than `min_size` pixels. Nothing is clamped: the draw page clamps while the worker drags, so a box
    outside the image here means a broken or forged client.
    """
    coords = {"x1": x1, "y1": y1, "x2": x2, "y2": y2}
    for name, value in coords.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise BoxError(f"{name} must be a number, got {value!r}") from None
        if not math.isfinite(number):
            raise BoxError(f"{name} must be a finite number, got {value!r}")
    if not (math.isfinite(width) and math.isfinite(height)) or width <= 0 or height <= 0:
        raise BoxError(f"image size must be positive, got {width} x {height}")
    fx1, fy1, fx2, fy2 = float(x1), float(y1), float(x2), float(y2)
    if fx2 <= fx1:
        raise BoxError(f"x2 ({fx2:g}) must be greater than x1 ({fx1:g})")
    if fy2 <= fy1:
        raise BoxError(f"y2 ({fy2:g}) must be greater than y1 ({fy1:g})")
    if fx1 < 0 or fy1 < 0 or fx2 > width or fy2 > height:
        raise BoxError(
            f"box ({fx1:g}, {fy1:g}, {fx2:g}, {fy2:g}) lies outside the image (0, 0, {width:g}, {height:g})"
        )
    if fx2 - fx1 < min_size or fy2 - fy1 < min_size:
        raise BoxError(f"box is {fx2 - fx1:g} x {fy2 - fy1:g} px; each side must be at least {min_size:g} px")
    return Box(fx1, fy1, fx2, fy2)


#: The four extreme points of extreme clicking (Papadopoulos et al., ICCV 2017, "Extreme clicking for efficient
#: object annotation"), in the order they are stored and named.
EXTREME_ROLES = ("top", "bottom", "left", "right")
_EXTREME_WORDS = {"top": "top-most", "bottom": "bottom-most", "left": "left-most", "right": "right-most"}


@dataclass(frozen=True, slots=True)
class ExtremePoints:
    """The top-, bottom-, left- and right-most points of one object, (x, y) in original-image pixels."""

    top: tuple[float, float]
    bottom: tuple[float, float]
    left: tuple[float, float]
    right: tuple[float, float]

    def bounds(self) -> tuple[float, float, float, float]:
        """The box the points define: exactly their bounds (x1, y1, x2, y2)."""
        return (self.left[0], self.top[1], self.right[0], self.bottom[1])

    def as_dict(self) -> dict[str, list[float]]:
        return {role: list(getattr(self, role)) for role in EXTREME_ROLES}


def validate_extreme_points(points: object, width: float, height: float) -> ExtremePoints:
    """Check four clicked extreme points against an image of `width` x `height` pixels (ICCV 2017 extreme
    clicking): `points` is {"top": [x, y], "bottom": ..., "left": ..., "right": ...}; each point lies inside the
    image and is the extreme one in its direction (the top point has no other point above it, and so on), so
    the box is exactly their bounds. Raises `BoxError` naming the point (`points.left`) and what is wrong."""
    if not isinstance(points, dict) or set(points) != set(EXTREME_ROLES):
        raise BoxError(
            '"points" must be an object with exactly "top", "bottom", "left" and "right", each [x, y] in image '
            "pixels"
        )
    parsed: dict[str, tuple[float, float]] = {}
    for role in EXTREME_ROLES:
        value = points[role]
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise BoxError(f"points.{role} must be a list of 2 numbers [x, y], got {value!r}")
        xy = []
        for axis, number in zip("xy", value, strict=True):
            if isinstance(number, bool) or not isinstance(number, int | float):
                raise BoxError(f"points.{role} {axis} must be a number, got {number!r}")
            if not math.isfinite(number):
                raise BoxError(f"points.{role} {axis} must be a finite number, got {number!r}")
            xy.append(float(number))
        x, y = xy
        if not (0 <= x <= width and 0 <= y <= height):
            raise BoxError(
                f"points.{role} ({x:g}, {y:g}) lies outside the image (0, 0, {width:g}, {height:g})"
            )
        parsed[role] = (x, y)
    # (role, coordinate index, -1 when the extreme is the least value, +1 the greatest)
    checks = (("top", 1, -1), ("bottom", 1, 1), ("left", 0, -1), ("right", 0, 1))
    for role, index, sign in checks:
        value = parsed[role][index]
        for other in EXTREME_ROLES:
            beyond = parsed[other][index]
            if sign * (beyond - value) > 0:
                raise BoxError(
                    f"points.{role} is not the {_EXTREME_WORDS[role]} point: points.{other} lies beyond it "
                    f"({'xy'[index]} {beyond:g} against {value:g}); click the {_EXTREME_WORDS[role]} "
                    "point of the object"
                )
    return ExtremePoints(**parsed)


def iou(a: BoxLike, b: BoxLike) -> float:
    """Intersection over union of two boxes; 0.0 for disjoint or merely touching boxes (and degenerate pairs)."""
    ax1, ay1, ax2, ay2 = _as_tuple(a)
    bx1, by1, bx2, by2 = _as_tuple(b)
    iw = min(ax2, bx2) - max(ax1, bx1)
    ih = min(ay2, by2) - max(ay1, by1)
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    union = max(ax2 - ax1, 0.0) * max(ay2 - ay1, 0.0) + max(bx2 - bx1, 0.0) * max(by2 - by1, 0.0) - inter
    return inter / union if union > 0 else 0.0


def iou_matrix(
    boxes_a: Iterable[BoxLike] | FloatArray, boxes_b: Iterable[BoxLike] | FloatArray
) -> FloatArray:
    """IoU of every box in `boxes_a` (N, 4) with every box in `boxes_b` (M, 4), as an (N, M) array.

    Same conventions as `iou`, computed by broadcasting (no Python loop).
    """
    a = as_boxes(boxes_a)
    b = as_boxes(boxes_b)
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)), dtype=np.float64)
    iw = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    ih = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    inter = np.clip(iw, 0.0, None) * np.clip(ih, 0.0, None)
    area_a = np.clip(a[:, 2] - a[:, 0], 0.0, None) * np.clip(a[:, 3] - a[:, 1], 0.0, None)
    area_b = np.clip(b[:, 2] - b[:, 0], 0.0, None) * np.clip(b[:, 3] - b[:, 1], 0.0, None)
    union = area_a[:, None] + area_b[None, :] - inter
    out = np.zeros_like(inter)
    np.divide(inter, union, out=out, where=union > 0)
    return out


def max_coordinate_difference(box: BoxLike, others: Iterable[BoxLike] | FloatArray) -> FloatArray:
    """For each box in `others`, the largest absolute difference over the four coordinates (L-infinity)."""
    ref = np.array(_as_tuple(box), dtype=np.float64)
    arr = as_boxes(others)
    if len(arr) == 0:
        return np.zeros(0, dtype=np.float64)
    result: FloatArray = np.abs(arr - ref[None, :]).max(axis=1)
    return result


def differs_by_at_least(
    box: BoxLike, others: Iterable[BoxLike] | FloatArray, px: float = DUPLICATE_MIN_DIFF_PX
) -> bool:
    """The draw page's duplicate rule (ILSVRC §3.2.1): True when `box` differs by at least `px` pixels from
    every box in `others` (the synset's existing boxes in that image).

    "Differs by at least px" is read as: some coordinate (x1, y1, x2 or y2) moves by at least `px`, i.e. the
    L-infinity distance between the coordinate vectors is >= px. A box nudged by a few pixels on every side is
    thus still a duplicate, while a box sharing one edge with its neighbour (adjacent instances) is not.
    With no existing boxes the rule holds trivially.
    """
    diffs = max_coordinate_difference(box, others)
    return bool(np.all(diffs >= px))


@dataclass(frozen=True, slots=True)
class Match:
    """One predicted box matched to one true box."""

    pred_index: int
    true_index: int
    iou: float


def greedy_match(
    pred: Iterable[BoxLike] | FloatArray,
    true: Iterable[BoxLike] | FloatArray,
    iou_threshold: float = 0.5,
    pred_order: Sequence[int] | None = None,
) -> list[Match]:
    """One-to-one greedy matching of predicted to true boxes with IoU >= `iou_threshold`.

    Without `pred_order`, pairs are taken by decreasing IoU (ties: lower pred index, then lower true index),
    which is what coverage measures want: each true box is claimed by the predicted box fitting it best.
    With `pred_order` (e.g. predicted boxes sorted by confidence, PASCAL VOC style), each predicted box in that
    order takes the unmatched true box with the highest IoU. Matches are returned in the order they were made.
    """
    ious = iou_matrix(pred, true)
    n_pred, n_true = ious.shape
    matches: list[Match] = []
    if n_pred == 0 or n_true == 0:
        return matches
    if pred_order is None:
        candidates = np.argwhere(ious >= iou_threshold)
        if len(candidates) == 0:
            return matches
        values = ious[candidates[:, 0], candidates[:, 1]]
        # lexsort: last key is primary -> decreasing IoU, then pred index, then true index.
        order = np.lexsort((candidates[:, 1], candidates[:, 0], -values))
        pred_used = np.zeros(n_pred, dtype=bool)
        true_used = np.zeros(n_true, dtype=bool)
        for k in order:
            p, t = int(candidates[k, 0]), int(candidates[k, 1])
            if pred_used[p] or true_used[t]:
                continue
            pred_used[p] = true_used[t] = True
            matches.append(Match(p, t, float(values[k])))
        return matches
    if sorted(pred_order) != list(range(n_pred)):
        raise ValueError("pred_order must be a permutation of the predicted box indices")
    true_free = np.ones(n_true, dtype=bool)
    for p in pred_order:
        row = np.where(true_free, ious[p], -1.0)
        t = int(np.argmax(row))
        if row[t] >= iou_threshold:
            true_free[t] = False
            matches.append(Match(int(p), t, float(row[t])))
    return matches


def best_iou(pred: Iterable[BoxLike] | FloatArray, true: Iterable[BoxLike] | FloatArray) -> FloatArray:
    """For each predicted box, its highest IoU with any true box (0.0 when there are no true boxes)."""
    ious = iou_matrix(pred, true)
    if ious.shape[1] == 0:
        return np.zeros(ious.shape[0], dtype=np.float64)
    result: FloatArray = ious.max(axis=1)
    return result


def coverage_fraction(
    pred: Iterable[BoxLike] | FloatArray, true: Iterable[BoxLike] | FloatArray, iou_threshold: float = 0.5
) -> float:
    """Fraction of true boxes claimed by a distinct predicted box at `iou_threshold` (1.0 with no true boxes)."""
    n_true = len(as_boxes(true))
    if n_true == 0:
        return 1.0
    return len(greedy_match(pred, true, iou_threshold)) / n_true


def is_fully_covered(
    pred: Iterable[BoxLike] | FloatArray, true: Iterable[BoxLike] | FloatArray, iou_threshold: float = 0.5
) -> bool:
    """True when every true box is claimed by a distinct predicted box (the per-image coverage of
    ILSVRC §3.2.1: "all instances boxed")."""
    return coverage_fraction(pred, true, iou_threshold) == 1.0


def accurate_fraction(
    pred: Iterable[BoxLike] | FloatArray, true: Iterable[BoxLike] | FloatArray, iou_threshold: float = 0.7
) -> float:
    """Fraction of predicted boxes whose best IoU with some true box is >= `iou_threshold` (the ILSVRC box
    accuracy figure uses 0.7); 1.0 when there are no predicted boxes."""
    scores = best_iou(pred, true)
    if len(scores) == 0:
        return 1.0
    return float(np.mean(scores >= iou_threshold))
