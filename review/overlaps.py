"""Pair finding for the review queues: same-class duplicate boxes and cross-class overlaps (ILSVRC Appendix E).

Pure numpy over column arrays; the Django side loads boxes into `BoxArrays` and turns `OverlapPairs` into queue items.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


class PairKind(IntEnum):
    """Which review queue a pair belongs to."""

    DUPLICATE = 1
    CROSS_CLASS = 2


def validate_box(x1: float, y1: float, x2: float, y2: float, width: float, height: float) -> None:
    """Refuse a box the platform must never store; raises ValueError saying what is wrong.

    Coordinates are pixels with (x1, y1) the top-left and (x2, y2) the bottom-right corner; a box may touch the
    image border but not cross it. Zero-area boxes are refused because IoU with them is undefined (0 / 0).
    """
    values = {"x1": x1, "y1": y1, "x2": x2, "y2": y2, "image width": width, "image height": height}
    for name, value in values.items():
        if not math.isfinite(value):
            raise ValueError(f"box {name} must be a finite number, got {value!r}")
    if width <= 0 or height <= 0:
        raise ValueError(f"image size must be positive, got {width!r} x {height!r}")
    if x2 <= x1 or y2 <= y1:
        raise ValueError(
            f"box ({x1}, {y1}, {x2}, {y2}) has zero or negative area: x2 must exceed x1 and y2 must exceed y1"
        )
    if x1 < 0 or y1 < 0 or x2 > width or y2 > height:
        raise ValueError(f"box ({x1}, {y1}, {x2}, {y2}) lies outside the {width} x {height} image")


@dataclass(frozen=True)
class BoxArrays:
    """All boxes to scan, one entry per box; box ids are unique."""

    box_id: IntArray
    image_id: IntArray
    class_id: IntArray
    x1: FloatArray
    y1: FloatArray
    x2: FloatArray
    y2: FloatArray

    def __post_init__(self) -> None:
        # Normalise dtypes once here so the scan never has to think about them.
        for name in ("box_id", "image_id", "class_id"):
            object.__setattr__(self, name, np.ascontiguousarray(getattr(self, name), dtype=np.int64))
        for name in ("x1", "y1", "x2", "y2"):
            object.__setattr__(self, name, np.ascontiguousarray(getattr(self, name), dtype=np.float64))
        n = self.box_id.shape
        for name in ("box_id", "image_id", "class_id", "x1", "y1", "x2", "y2"):
            arr = getattr(self, name)
            if arr.ndim != 1 or arr.shape != n:
                raise ValueError(f"{name} must be a 1-D array of the same length as box_id ({n[0]})")
        coords = np.stack([self.x1, self.y1, self.x2, self.y2])
        if not np.isfinite(coords).all():
            bad = self.box_id[~np.isfinite(coords).all(axis=0)]
            raise ValueError(f"boxes with non-finite coordinates: {bad[:10].tolist()}")
        degenerate = (self.x2 <= self.x1) | (self.y2 <= self.y1)
        if degenerate.any():
            raise ValueError(f"boxes with zero or negative area: {self.box_id[degenerate][:10].tolist()}")
        if len(self.box_id) > 1:
            ids = np.sort(self.box_id)
            repeated = ids[1:][ids[1:] == ids[:-1]]
            if repeated.size:
                raise ValueError(f"box ids must be unique; repeated: {np.unique(repeated)[:10].tolist()}")

    def __len__(self) -> int:
        return int(self.box_id.shape[0])

    def take(self, index: npt.NDArray[np.integer] | BoolArray) -> BoxArrays:
        """The subset of boxes selected by an index or mask array."""
        return BoxArrays(
            box_id=self.box_id[index],
            image_id=self.image_id[index],
            class_id=self.class_id[index],
            x1=self.x1[index],
            y1=self.y1[index],
            x2=self.x2[index],
            y2=self.y2[index],
        )


@dataclass(frozen=True)
class OverlapThresholds:
    """Queue thresholds; a pair is queued when its IoU is strictly above the threshold.

    `confusable_pairs` are unordered class pairs (e.g. seal / sea otter) whose overlaps are queued at
    `confusable_iou` instead of `cross_class_iou` (ILSVRC Appendix E).
    """

    duplicate_iou: float = 0.5
    cross_class_iou: float = 0.5
    confusable_iou: float = 0.3
    confusable_pairs: frozenset[tuple[int, int]] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        for name in ("duplicate_iou", "cross_class_iou", "confusable_iou"):
            value = getattr(self, name)
            if not (0.0 <= value < 1.0):
                raise ValueError(f"{name} must be in [0, 1), got {value!r}")
        normalised = set()
        for a, b in self.confusable_pairs:
            if a == b:
                raise ValueError(f"a confusable pair needs two different classes, got ({a}, {b})")
            normalised.add((min(int(a), int(b)), max(int(a), int(b))))
        object.__setattr__(self, "confusable_pairs", frozenset(normalised))


@dataclass(frozen=True)
class OverlapPairs:
    """Found pairs, sorted by (box_a, box_b) with box_a < box_b; `kind` holds `PairKind` values.

    `confusable` marks cross-class pairs whose classes are a listed confusable pair.
    """

    box_a: IntArray
    box_b: IntArray
    iou: FloatArray
    kind: npt.NDArray[np.int8]
    confusable: BoolArray

    def __len__(self) -> int:
        return int(self.box_a.shape[0])

    @classmethod
    def empty(cls) -> OverlapPairs:
        return cls(
            box_a=np.empty(0, np.int64),
            box_b=np.empty(0, np.int64),
            iou=np.empty(0, np.float64),
            kind=np.empty(0, np.int8),
            confusable=np.empty(0, np.bool_),
        )

    def of_kind(self, kind: PairKind) -> OverlapPairs:
        return self._take(self.kind == kind)

    def involving(self, box_ids: npt.ArrayLike) -> OverlapPairs:
        """Only the pairs with at least one box among `box_ids`."""
        ids = np.asarray(box_ids, dtype=np.int64)
        return self._take(np.isin(self.box_a, ids) | np.isin(self.box_b, ids))

    def _take(self, index: npt.NDArray[np.bool_] | npt.NDArray[np.intp]) -> OverlapPairs:
        """The pairs selected by a mask or an index array, in that order."""
        return OverlapPairs(*(getattr(self, name)[index] for name in _PAIR_FIELDS))


_PAIR_FIELDS = ("box_a", "box_b", "iou", "kind", "confusable")


def _iou_from_parts(inter: FloatArray, area_a: FloatArray, area_b: FloatArray) -> FloatArray:
    # One formula shared by every path, so the same two boxes always get bit-identical IoU:
    # inter / ((area_a + area_b) - inter).
    union = area_a + area_b
    union -= inter
    return np.divide(inter, union, out=union)


def find_overlap_pairs(boxes: BoxArrays, thresholds: OverlapThresholds | None = None) -> OverlapPairs:
    """Every duplicate and cross-class pair among boxes of the same image.

    Images are independent, so callers may scan any subset of whole images (e.g. one batch per task run) and
    concatenate the results. Work and memory grow with the number of boxes plus the number of pairs that
    overlap horizontally, not with the square of the boxes per image.
    """
    thresholds = thresholds or OverlapThresholds()
    n = len(boxes)
    if n < 2:
        return OverlapPairs.empty()

    # Sweep and prune: sort by image, then by left edge. Box i can only overlap a later box j of its image
    # while x1[j] < x2[i]; once some j fails that test every later one fails too. So all images advance in
    # lockstep, one step further to the right per round, with a shrinking set of still-open boxes.
    order = np.argsort(boxes.x1, kind="stable")
    order = order[np.argsort(boxes.image_id[order], kind="stable")]
    image = boxes.image_id[order]
    # One +inf sentinel past the end, so a box whose run ends at the last position drops out by the x test.
    x1 = np.append(boxes.x1[order], np.inf)
    coords = _SortedBoxes(
        box_id=boxes.box_id[order],
        x1=x1,
        y1=boxes.y1[order],
        x2=boxes.x2[order],
        y2=boxes.y2[order],
        area=(boxes.x2[order] - x1[:n]) * (boxes.y2[order] - boxes.y1[order]),
    )
    # Dense class codes keep confusable-pair keys (lo * n_classes + hi) small whatever the raw ids are.
    class_values, class_code = np.unique(boxes.class_id[order], return_inverse=True)
    scorer = _PairScorer(
        class_code=class_code.astype(np.int64),
        n_classes=np.int64(len(class_values)),
        confusable_keys=_confusable_keys(thresholds.confusable_pairs, class_values),
        thresholds=thresholds,
    )

    run_starts = np.flatnonzero(np.r_[True, image[1:] != image[:-1]])
    run_end = np.repeat(np.r_[run_starts[1:], n], np.diff(np.r_[run_starts, n]))
    found: list[OverlapPairs] = []
    open_boxes = np.arange(n - 1, dtype=np.int64)
    step = 1
    while open_boxes.size:
        # partner <= n: a box stays open only while its previous partner was inside its run.
        partner = open_boxes + step
        still_open = (partner < run_end[open_boxes]) & (x1[partner] < coords.x2[open_boxes])
        open_boxes, partner = open_boxes[still_open], partner[still_open]
        if open_boxes.size:
            found.append(scorer.score(coords, open_boxes, partner))
        step += 1

    if not found:
        return OverlapPairs.empty()
    merged = OverlapPairs(*(np.concatenate([getattr(f, name) for f in found]) for name in _PAIR_FIELDS))
    return merged._take(np.lexsort((merged.box_b, merged.box_a)))


def find_overlap_pairs_for_changed(
    boxes: BoxArrays,
    changed_box_ids: npt.ArrayLike,
    thresholds: OverlapThresholds | None = None,
) -> OverlapPairs:
    """The pairs that involve at least one new or changed box; only images holding such a box are re-scanned.

    `boxes` is the full current set; changed ids absent from it (deleted or removed boxes) select nothing, so the
    caller closes their open pairs itself.
    """
    changed = np.unique(np.asarray(changed_box_ids, dtype=np.int64))
    is_changed = np.isin(boxes.box_id, changed)
    if not is_changed.any():
        return OverlapPairs.empty()
    touched_images = np.unique(boxes.image_id[is_changed])
    subset = boxes.take(np.isin(boxes.image_id, touched_images))
    pairs = find_overlap_pairs(subset, thresholds)
    return pairs.involving(changed)


def _confusable_keys(pairs: frozenset[tuple[int, int]], class_values: IntArray) -> IntArray:
    """Sorted keys lo * n_classes + hi (dense codes) of the confusable pairs whose classes are both present."""
    if not pairs:
        return np.empty(0, np.int64)
    raw = np.array(sorted(pairs), dtype=np.int64)
    lo = np.searchsorted(class_values, raw[:, 0])
    hi = np.searchsorted(class_values, raw[:, 1])
    n = len(class_values)
    present = (lo < n) & (hi < n)
    present[present] &= (class_values[lo[present]] == raw[present, 0]) & (
        class_values[hi[present]] == raw[present, 1]
    )
    # raw pairs are (min, max) by id and dense codes preserve order, so lo < hi here.
    return np.unique(lo[present].astype(np.int64) * n + hi[present])


@dataclass(frozen=True)
class _SortedBoxes:
    box_id: IntArray
    x1: FloatArray  # one longer than the others (sentinel)
    y1: FloatArray
    x2: FloatArray
    y2: FloatArray
    area: FloatArray


@dataclass(frozen=True)
class _PairScorer:
    class_code: IntArray
    n_classes: np.int64
    confusable_keys: IntArray
    thresholds: OverlapThresholds

    def score(self, boxes: _SortedBoxes, i: IntArray, j: IntArray) -> OverlapPairs:
        """IoU of horizontally overlapping pairs at sorted positions (i, j), kept if above their queue's threshold."""
        t = self.thresholds
        iw = np.minimum(boxes.x2[i], boxes.x2[j])
        iw -= np.maximum(boxes.x1[i], boxes.x1[j])
        ih = np.minimum(boxes.y2[i], boxes.y2[j])
        ih -= np.maximum(boxes.y1[i], boxes.y1[j])
        np.maximum(ih, 0.0, out=ih)
        iou = _iou_from_parts(iw * ih, boxes.area[i], boxes.area[j])

        ci, cj = self.class_code[i], self.class_code[j]
        same_class = ci == cj
        duplicate = same_class & (iou > t.duplicate_iou)
        cross = ~same_class & (iou > min(t.cross_class_iou, t.confusable_iou))
        cross_idx = np.flatnonzero(cross)
        ki, kj = ci[cross_idx], cj[cross_idx]
        is_confusable = np.isin(
            np.minimum(ki, kj) * self.n_classes + np.maximum(ki, kj), self.confusable_keys
        )
        limit = np.where(is_confusable, t.confusable_iou, t.cross_class_iou)
        cross_kept = iou[cross_idx] > limit
        cross[cross_idx[~cross_kept]] = False
        confusable = np.zeros(len(i), np.bool_)
        confusable[cross_idx[cross_kept & is_confusable]] = True

        keep = np.flatnonzero(duplicate | cross)
        id_i, id_j = boxes.box_id[i[keep]], boxes.box_id[j[keep]]
        kind = np.where(duplicate[keep], np.int8(PairKind.DUPLICATE), np.int8(PairKind.CROSS_CLASS))
        return OverlapPairs(
            box_a=np.minimum(id_i, id_j),
            box_b=np.maximum(id_i, id_j),
            iou=iou[keep],
            kind=kind.astype(np.int8),
            confusable=confusable[keep],
        )
