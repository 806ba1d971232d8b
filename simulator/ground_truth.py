"""Scores of the platform's final labels and boxes against the simulator's ground truth: precision and recall of
image-level labels, box coverage and box accuracy (the figures ILSVRC §3.2.1 reports for its box pipeline).

Boxes are (x1, y1, x2, y2) in image pixels, keyed by (image id, class key); only boxes of the same image and
class are ever compared.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from annotation.geometry import iou_matrix

# An instance counts as covered when an accepted box overlaps it at IoU >= 0.5: the PASCAL VOC / ILSVRC
# detection criterion. It is looser than ACCURACY_IOU on purpose: coverage asks "was this instance boxed at
# all?", accuracy asks "is the box tight?", and a loose-but-present box should fail only the second.
COVERAGE_IOU = 0.5
# A box is accurate at IoU >= 0.7 with a true box: ILSVRC §3.2.1 (99.2% of accepted boxes met it).
ACCURACY_IOU = 0.7

BoxArray = np.ndarray | Sequence[Sequence[float]]
BoxesByKey = Mapping[tuple[Hashable, str], BoxArray]


@dataclass(frozen=True)
class LabelScore:
    precision: float | None
    recall: float | None
    true_positives: int
    false_positives: int
    false_negatives: int


@dataclass(frozen=True)
class BoxScore:
    coverage: float | None
    accuracy: float | None
    images: int
    covered_images: int
    accepted_boxes: int
    accurate_boxes: int
    duplicate_boxes: int


def label_precision_recall(
    predicted: Iterable[tuple[Hashable, str]], truth: Iterable[tuple[Hashable, str]]
) -> LabelScore:
    """Precision and recall of predicted (image, class) presence labels; None where the denominator is 0."""
    pred, true = set(predicted), set(truth)
    tp = len(pred & true)
    fp = len(pred - true)
    fn = len(true - pred)
    return LabelScore(
        precision=tp / (tp + fp) if pred else None,
        recall=tp / (tp + fn) if true else None,
        true_positives=tp,
        false_positives=fp,
        false_negatives=fn,
    )


def as_boxes(boxes: BoxArray) -> np.ndarray:
    """Any sequence of 4-number boxes as a float array of shape (N, 4)."""
    return np.asarray(boxes, dtype=np.float64).reshape(-1, 4)


def match_boxes(true_boxes: BoxArray, boxes: BoxArray, iou_threshold: float = COVERAGE_IOU) -> np.ndarray:
    """One-to-one greedy matching by decreasing IoU (as PASCAL VOC evaluation does): for each box in
    `boxes`, the index of the true box it matches, or -1. A true box is matched at most once, so a second box
    on the same instance stays unmatched (a duplicate)."""
    iou = iou_matrix(boxes, true_boxes)
    out = np.full(iou.shape[0], -1, dtype=np.int64)
    if iou.size == 0:
        return out
    flat_iou = iou.ravel()
    candidates = np.flatnonzero(flat_iou >= iou_threshold)
    order = candidates[np.argsort(-flat_iou[candidates], kind="stable")]
    taken = np.zeros(iou.shape[1], dtype=bool)
    for flat in order.tolist():
        i, j = divmod(flat, iou.shape[1])
        if out[i] < 0 and not taken[j]:
            out[i] = j
            taken[j] = True
    return out


def all_instances_covered(true_boxes: BoxArray, boxes: BoxArray, iou_threshold: float = COVERAGE_IOU) -> bool:
    """True when every true box is matched one-to-one by some box at IoU >= iou_threshold."""
    n_true = as_boxes(true_boxes).shape[0]
    matched = match_boxes(true_boxes, boxes, iou_threshold)
    return int((matched >= 0).sum()) == n_true


def box_scores(
    truth: BoxesByKey,
    accepted: BoxesByKey,
    coverage_iou: float = COVERAGE_IOU,
    accuracy_iou: float = ACCURACY_IOU,
) -> BoxScore:
    """Coverage: share of images with at least one true instance whose every instance (of every class) is
    matched one-to-one by an accepted box of its class at IoU >= coverage_iou.
    Accuracy: share of accepted boxes with IoU >= accuracy_iou to some true box of the same image and class
    (not one-to-one, as ILSVRC reports it; duplicates are counted separately)."""
    image_covered: dict[Hashable, bool] = {}
    for (image, cls), tboxes in truth.items():
        t = as_boxes(tboxes)
        if t.shape[0] == 0:
            continue
        covered = all_instances_covered(t, accepted.get((image, cls), ()), coverage_iou)
        image_covered[image] = image_covered.get(image, True) and covered

    n_accepted = n_accurate = n_duplicates = 0
    for key, aboxes in accepted.items():
        a = as_boxes(aboxes)
        if a.shape[0] == 0:
            continue
        t = as_boxes(truth.get(key, ()))
        n_accepted += a.shape[0]
        if t.shape[0] == 0:
            continue
        iou = iou_matrix(a, t)
        n_accurate += int((iou.max(axis=1) >= accuracy_iou).sum())
        # A duplicate overlaps an instance (at the coverage IoU) that another box already took.
        matched = match_boxes(t, a, coverage_iou)
        n_duplicates += int(((matched < 0) & (iou.max(axis=1) >= coverage_iou)).sum())

    n_images = len(image_covered)
    n_covered = sum(image_covered.values())
    return BoxScore(
        coverage=n_covered / n_images if n_images else None,
        accuracy=n_accurate / n_accepted if n_accepted else None,
        images=n_images,
        covered_images=n_covered,
        accepted_boxes=n_accepted,
        accurate_boxes=n_accurate,
        duplicate_boxes=n_duplicates,
    )


def box_coverage(
    truth: BoxesByKey, accepted: BoxesByKey, iou_threshold: float = COVERAGE_IOU
) -> float | None:
    """See `box_scores`; None when no image has a true instance."""
    return box_scores(truth, accepted, coverage_iou=iou_threshold).coverage


def box_accuracy(
    truth: BoxesByKey, accepted: BoxesByKey, iou_threshold: float = ACCURACY_IOU
) -> float | None:
    """See `box_scores`; None when no box was accepted."""
    return box_scores(truth, accepted, accuracy_iou=iou_threshold).accuracy
