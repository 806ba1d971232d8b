"""ILSVRC metrics: classification top-k error (Eq. 1), single-object localization error (Eq. 2) and
detection AP with Algorithm 2's greedy matching and the small-object threshold (Russakovsky et al., §4).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .data import Detections, FloatArray, GroundTruth, ImageLabels, IntArray, TopKPredictions
from .matching import greedy_match, pair_iou, pairs_within_groups
from .voc import DetectionFlags, ap_per_class

LOCALIZATION_IOU = 0.5
SMALL_OBJECT_MARGIN = 10.0  # pixels added to each side length in the threshold (§4.3)


def detection_threshold(gt_boxes: FloatArray, pixel_inclusive: bool = False) -> FloatArray:
    """Per-truth IoU threshold ``min(0.5, wh / ((w + 10)(h + 10)))`` (ILSVRC §4.3).

    A 10x10 object gets 100/400 = 0.25, so a 20x20 box around it still counts: small objects are hard to
    box to within a few pixels. ``w, h`` follow the truth's pixel convention (devkit: ``x2 - x1 + 1``).
    """
    one = 1.0 if pixel_inclusive else 0.0
    w = gt_boxes[:, 2] + one
    h = gt_boxes[:, 3] + one
    return np.minimum(0.5, (w * h) / ((w + SMALL_OBJECT_MARGIN) * (h + SMALL_OBJECT_MARGIN)))


def ilsvrc_det_flags(gt: GroundTruth, dets: Detections) -> DetectionFlags:
    """Algorithm 2 outcome per detection (see ``evaluate_ilsvrc_det``)."""
    table = np.unique(gt.image_ids)
    d_pos = np.clip(np.searchsorted(table, dets.image), 0, max(len(table) - 1, 0))
    if len(dets) and (not len(table) or not np.all(table[d_pos] == dets.image)):
        raise ValueError("detections refer to images absent from the ground truth")
    g_pos = np.clip(np.searchsorted(table, gt.box_image), 0, max(len(table) - 1, 0))
    g_listed = table[g_pos] == gt.box_image if len(table) else np.zeros(gt.n_boxes, bool)

    keep_d = np.ones(len(dets), bool)
    keep_g = g_listed.copy()
    if gt.blacklist:
        keep_d &= np.array(
            [
                (i, c) not in gt.blacklist
                for i, c in zip(dets.image.tolist(), dets.category.tolist(), strict=True)
            ],
            bool,
        )
        keep_g &= np.array(
            [
                (i, c) not in gt.blacklist
                for i, c in zip(gt.box_image.tolist(), gt.box_category.tolist(), strict=True)
            ],
            bool,
        )

    n_key = int(max(gt.box_category.max(initial=0), dets.category.max(initial=0))) + 1
    g_group = np.where(keep_g, g_pos * n_key + gt.box_category, -1)
    d_idx = np.flatnonzero(keep_d)
    d_group_all = d_pos[d_idx] * n_key + dets.category[d_idx]
    # Processing order inside each (image, class): decreasing confidence, input order on ties.
    order = np.lexsort((np.arange(len(d_idx)), -dets.scores[d_idx], d_group_all))
    d_idx, d_group = d_idx[order], d_group_all[order]

    pair_det, pair_gt = pairs_within_groups(d_group, g_group)
    ious = pair_iou(dets.boxes[d_idx][pair_det], gt.boxes[pair_gt], pixel_inclusive=gt.pixel_inclusive)
    thresholds = detection_threshold(gt.boxes, gt.pixel_inclusive)
    pair_ok = ((ious >= thresholds[pair_gt]) & (ious > 0))[None, :]
    no = np.zeros(gt.n_boxes, bool)
    cand, match = greedy_match(d_group, pair_det, pair_gt, ious, pair_ok, no, no, prefer_last=False)

    tp_all = np.zeros(len(dets), bool)
    tp_all[d_idx[cand]] = match[0] >= 0
    categories = np.unique(gt.category_ids)
    # The devkit pools each image's results image by image before its stable sort by confidence, so equal
    # scores rank by image, then by file order: hand the detections to the AP in that order.
    known = np.flatnonzero(np.isin(dets.category, categories))
    known = known[np.argsort(d_pos[known], kind="stable")]
    return DetectionFlags(
        categories=categories,
        names=tuple(gt.name_of(int(c)) for c in categories),
        det_image=d_pos[known],
        det_category=dets.category[known],
        det_score=dets.scores[known],
        tp=tp_all[known],
        fp=(keep_d & ~tp_all)[known],  # blacklisted detections are neither
        gt_image=g_pos[keep_g],
        gt_category=gt.box_category[keep_g],
    )


def evaluate_ilsvrc_det(gt: GroundTruth, dets: Detections) -> dict[str, Any]:
    """mAP and AP per class name under the ILSVRC detection protocol (§4.3, Algorithm 2).

    Per image and class, detections in decreasing confidence each take the unassigned truth of highest IoU
    among those whose IoU reaches that truth's threshold (``ov >= thr(k)``: exactly 0.5 counts; first truth on
    ties, as the devkit's strict ``>``). Boxes are scored as submitted, past the border or not, with the
    devkit's +1 on pixel-inclusive truth. AP is the all-point area under the precision envelope (``VOCap``),
    pooled over images; equal scores rank by image, then file order, as the devkit pools them. Detections of
    a class on an image blacklisted for that class are dropped, as are that image's truths of the class.
    """
    return ap_per_class(ilsvrc_det_flags(gt, dets), eleven_point=False)


def ilsvrc_det_resampler(gt: GroundTruth, dets: Detections) -> Callable[[IntArray], dict[str, Any]]:
    """Scores of bootstrap draws (image ids, with repeats), matching once."""
    flags = ilsvrc_det_flags(gt, dets)
    table = np.unique(gt.image_ids)
    return lambda sample_ids: ap_per_class(flags, False, np.searchsorted(table, sample_ids))


def _guess_rows(gt: ImageLabels, pred: TopKPredictions) -> np.ndarray:
    """Row of ``pred`` for each truth image, -1 when the submission skipped it (counted as an error)."""
    first_row: dict[int, int] = {}
    for row, image in enumerate(pred.image_ids.tolist()):
        first_row.setdefault(image, row)
    return np.array([first_row.get(i, -1) for i in gt.image_ids.tolist()], dtype=np.int64)


def _topk_errors(correct: np.ndarray) -> dict[str, float]:
    """``correct`` is (N, k): guess j of image i is right. Error at k = share of images with no right guess."""
    n = correct.shape[0]
    if n == 0:
        return {"top1_error": 0.0, "top5_error": 0.0}
    return {
        "top1_error": float(np.mean(~correct[:, :1].any(axis=1))),
        "top5_error": float(np.mean(~correct[:, :5].any(axis=1))),
    }


def _guesses(gt: ImageLabels, pred: TopKPredictions) -> tuple[np.ndarray, np.ndarray]:
    rows = _guess_rows(gt, pred)
    k = max(pred.labels.shape[1], 5)
    labels = np.full((len(rows), k), -1, dtype=np.int64)
    present = rows >= 0
    labels[present, : pred.labels.shape[1]] = pred.labels[rows[present]]
    return rows, labels


def evaluate_ilsvrc_cls(gt: ImageLabels, pred: TopKPredictions) -> dict[str, float]:
    """Top-1 and top-5 classification error (ILSVRC Eq. 1): an image is an error when no guess is its class."""
    _, labels = _guesses(gt, pred)
    return _topk_errors(labels == gt.labels[:, None])


def evaluate_ilsvrc_loc(
    gt: ImageLabels, pred: TopKPredictions, iou_threshold: float = LOCALIZATION_IOU
) -> dict[str, float]:
    """Top-1 and top-5 single-object localization error (ILSVRC Eq. 2).

    A guess is right when its class is the image's class and its box overlaps some instance of that class
    with IoU >= ``iou_threshold`` (the devkit's comparison; the paper words it "more than 50%").
    """
    if pred.boxes is None:
        raise ValueError("localization needs a box with every guess")
    rows, labels = _guesses(gt, pred)
    n, k = labels.shape
    boxes = np.zeros((n, k, 4))
    present = rows >= 0
    boxes[present, : pred.boxes.shape[1]] = pred.boxes[rows[present]]
    right_class = labels == gt.labels[:, None]
    # Every (guess, instance of the true class in the same image) pair.
    image_pos = {i: p for p, i in enumerate(gt.image_ids.tolist())}
    inst_img = np.array([image_pos.get(i, -1) for i in gt.box_image.tolist()], dtype=np.int64)
    inst = np.flatnonzero(inst_img >= 0)
    guess_img = np.repeat(np.arange(n), k)
    pair_guess, pair_inst = pairs_within_groups(guess_img, inst_img[inst])
    ious = pair_iou(
        boxes.reshape(-1, 4)[pair_guess], gt.boxes[inst][pair_inst], pixel_inclusive=gt.pixel_inclusive
    )
    well_placed = np.zeros(n * k, bool)
    np.logical_or.at(well_placed, pair_guess, ious >= iou_threshold)
    return _topk_errors(right_class & well_placed.reshape(n, k))
