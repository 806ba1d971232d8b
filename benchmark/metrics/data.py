"""Array containers the evaluation protocols consume: detection ground truth, detections, and top-k labels.

Readers (COCO dicts, VOC XML, ILSVRC text) build these; every protocol and the bootstrap only see them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


def _ints(values: Any) -> IntArray:
    return np.asarray(values, dtype=np.int64).reshape(-1)


def _floats(values: Any, columns: int | None = None) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if columns is not None:
        array = array.reshape(-1, columns)
    return array.reshape(-1) if columns is None else array


@dataclass(frozen=True)
class GroundTruth:
    """Boxes of a detection benchmark; one row per annotated object.

    ``boxes`` are ``[x, y, w, h]``. With ``pixel_inclusive`` the devkit convention of VOC and ILSVRC applies
    (integer pixel coordinates, a box spans ``w + 1`` pixels); otherwise coordinates are continuous (COCO).
    """

    image_ids: IntArray  # every evaluated image, including images without boxes
    category_ids: IntArray
    box_image: IntArray
    box_category: IntArray
    boxes: FloatArray  # (M, 4) x, y, w, h
    area: FloatArray | None = None  # COCO 'area' (segment area); defaults to w * h
    iscrowd: BoolArray | None = None
    difficult: BoolArray | None = None
    ann_ids: IntArray | None = None
    category_names: Mapping[int, str] = field(default_factory=dict)
    image_sizes: Mapping[int, tuple[float, float]] | None = None  # image id -> (width, height)
    pixel_inclusive: bool = False
    # ILSVRC DET: (image id, category id) pairs too ambiguous to localize; detections there are ignored.
    blacklist: frozenset[tuple[int, int]] = frozenset()

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "image_ids", _ints(self.image_ids))
        set_(self, "category_ids", _ints(self.category_ids))
        set_(self, "box_image", _ints(self.box_image))
        set_(self, "box_category", _ints(self.box_category))
        set_(self, "boxes", _floats(self.boxes, 4))
        m = len(self.box_image)
        if not (len(self.box_category) == len(self.boxes) == m):
            raise ValueError("box_image, box_category and boxes must have the same length")
        area = self.boxes[:, 2] * self.boxes[:, 3] if self.area is None else _floats(self.area)
        set_(self, "area", area)
        for name in ("iscrowd", "difficult"):
            value = getattr(self, name)
            set_(self, name, np.zeros(m, bool) if value is None else np.asarray(value, bool).reshape(-1))
        ids = np.arange(1, m + 1) if self.ann_ids is None else _ints(self.ann_ids)
        set_(self, "ann_ids", ids)

    @property
    def n_boxes(self) -> int:
        return len(self.box_image)

    def name_of(self, category_id: int) -> str:
        return self.category_names.get(int(category_id), str(int(category_id)))


@dataclass(frozen=True)
class Detections:
    """Scored boxes submitted for a detection benchmark, ``[x, y, w, h]`` in the ground truth's convention."""

    image: IntArray
    category: IntArray
    boxes: FloatArray
    scores: FloatArray
    # Counted by the readers when image sizes are known; the boxes themselves are scored as given.
    past_border: int = 0  # boxes reaching past the image's border (wholly outside included)
    outside: int = 0  # boxes wholly outside the image

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "image", _ints(self.image))
        set_(self, "category", _ints(self.category))
        set_(self, "boxes", _floats(self.boxes, 4))
        set_(self, "scores", _floats(self.scores))
        if not (len(self.image) == len(self.category) == len(self.boxes) == len(self.scores)):
            raise ValueError("image, category, boxes and scores must have the same length")

    def __len__(self) -> int:
        return len(self.image)


@dataclass(frozen=True)
class ImageLabels:
    """Classification / single-object localization truth: one class per image (ILSVRC §4.1-4.2).

    For localization, ``box_image``/``boxes`` list every instance of the image's true class.
    """

    image_ids: IntArray
    labels: IntArray
    box_image: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    boxes: FloatArray = field(default_factory=lambda: np.zeros((0, 4)))
    category_names: Mapping[int, str] = field(default_factory=dict)
    pixel_inclusive: bool = False

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "image_ids", _ints(self.image_ids))
        set_(self, "labels", _ints(self.labels))
        set_(self, "box_image", _ints(self.box_image))
        set_(self, "boxes", _floats(self.boxes, 4))
        if len(self.image_ids) != len(self.labels):
            raise ValueError("image_ids and labels must have the same length")


@dataclass(frozen=True)
class TopKPredictions:
    """Up to k guesses per image, best first; label -1 pads missing guesses. Boxes only for localization."""

    image_ids: IntArray
    labels: IntArray  # (N, k)
    boxes: FloatArray | None = None  # (N, k, 4) x, y, w, h
    past_border: int = 0  # guessed boxes reaching past the image's border, scored as given
    outside: int = 0  # guessed boxes wholly outside the image

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "image_ids", _ints(self.image_ids))
        labels = np.asarray(self.labels, dtype=np.int64)
        set_(self, "labels", labels.reshape(len(self.image_ids), -1))
        if self.boxes is not None:
            set_(self, "boxes", np.asarray(self.boxes, np.float64).reshape(len(self.image_ids), -1, 4))


# --- resampling by image (used by the bootstrap, ILSVRC §6.2) -------------------------------------------------


def expand_rows(row_image: IntArray, sample: IntArray) -> tuple[IntArray, IntArray]:
    """Rows belonging to each sampled image, repeated once per draw.

    ``sample`` holds image ids drawn with replacement. Returns (row indices, new image id per row) where the new
    id of a draw is its position in ``sample``, so a twice-drawn image becomes two distinct images.
    """
    order = np.argsort(row_image, kind="stable")
    sorted_images = row_image[order]
    starts = np.searchsorted(sorted_images, sample, side="left")
    ends = np.searchsorted(sorted_images, sample, side="right")
    counts = ends - starts
    total = int(counts.sum())
    new_image = np.repeat(np.arange(len(sample), dtype=np.int64), counts)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    rows = order[np.repeat(starts, counts) + offsets]
    return rows, new_image


def resample_detection(gt: GroundTruth, dets: Detections, sample: IntArray) -> tuple[GroundTruth, Detections]:
    """Ground truth and detections restricted to ``sample`` (image ids, with repeats), images renumbered."""
    g_rows, g_img = expand_rows(gt.box_image, sample)
    d_rows, d_img = expand_rows(dets.image, sample)
    sizes = None
    if gt.image_sizes is not None:
        sizes = {i: gt.image_sizes[int(s)] for i, s in enumerate(sample) if int(s) in gt.image_sizes}
    assert gt.area is not None and gt.iscrowd is not None and gt.difficult is not None
    blacklist = (
        frozenset((i, c) for i, s in enumerate(sample) for (b, c) in gt.blacklist if b == int(s))
        if gt.blacklist
        else frozenset()
    )
    new_gt = replace(
        gt,
        image_ids=np.arange(len(sample)),
        box_image=g_img,
        box_category=gt.box_category[g_rows],
        boxes=gt.boxes[g_rows],
        area=gt.area[g_rows],
        iscrowd=gt.iscrowd[g_rows],
        difficult=gt.difficult[g_rows],
        ann_ids=np.arange(1, len(g_rows) + 1),
        image_sizes=sizes,
        blacklist=blacklist,
    )
    new_dets = Detections(d_img, dets.category[d_rows], dets.boxes[d_rows], dets.scores[d_rows])
    return new_gt, new_dets


def resample_labels(
    gt: ImageLabels, pred: TopKPredictions, sample: IntArray
) -> tuple[ImageLabels, TopKPredictions]:
    """Classification truth and guesses restricted to ``sample`` (image ids, with repeats), images renumbered."""
    pos = {int(i): k for k, i in enumerate(gt.image_ids)}
    gt_pos = np.array([pos[int(s)] for s in sample], dtype=np.int64)
    b_rows, b_img = expand_rows(gt.box_image, sample)
    new_gt = replace(
        gt,
        image_ids=np.arange(len(sample)),
        labels=gt.labels[gt_pos],
        box_image=b_img,
        boxes=gt.boxes[b_rows],
    )
    p_rows, p_img = expand_rows(pred.image_ids, sample)
    boxes = None if pred.boxes is None else pred.boxes[p_rows]
    return new_gt, TopKPredictions(p_img, pred.labels[p_rows], boxes)


def category_name_map(categories: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    return {int(c["id"]): str(c.get("name", c["id"])) for c in categories}
