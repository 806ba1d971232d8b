"""PASCAL VOC detection AP: the 2007 11-point rule and the 2010+ all-point rule, with "difficult" objects.

Matching follows VOCdevkit ``VOCevaldet.m``: detections of a class in decreasing confidence each look at the
truth of highest overlap in their image (first one on ties); IoU >= 0.5 with a free truth is a true positive,
with an already detected truth a false positive, with a difficult truth neither.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .data import BoolArray, Detections, GroundTruth, IntArray
from .matching import pair_iou, pairs_within_groups

IOU_THRESHOLD = 0.5
# Recall levels of the 11-point rule as exact tenths (k / 10), so a recall of exactly 0.3 reaches level 0.3.
ELEVEN_POINTS = np.linspace(0.0, 1.0, 11)


def average_precision(tp: BoolArray, fp: BoolArray, n_pos: int, eleven_point: bool) -> float:
    """AP of detections already sorted by decreasing confidence (VOCdevkit ``VOCevaldet.m`` / ``VOCap.m``)."""
    tp_sum = np.cumsum(tp).astype(np.float64)
    fp_sum = np.cumsum(fp).astype(np.float64)
    rec = tp_sum / n_pos
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = tp_sum / (tp_sum + fp_sum)
    prec = np.nan_to_num(prec)
    if eleven_point:
        # VOC2007: mean over recall levels of the best precision at recall >= level (0 when unreachable).
        total = 0.0
        for level in ELEVEN_POINTS:
            reached = prec[rec >= level]
            total += float(reached.max()) if reached.size else 0.0
        return total / 11.0
    # VOC2010+: area under the precision envelope, summed where recall changes.
    mrec = np.concatenate([[0.0], rec, [1.0]])
    mpre = np.concatenate([[0.0], prec, [0.0]])
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]
    steps = np.flatnonzero(mrec[1:] != mrec[:-1])
    return float(np.sum((mrec[steps + 1] - mrec[steps]) * mpre[steps + 1]))


def _image_positions(gt: GroundTruth, images: IntArray) -> tuple[IntArray, BoolArray]:
    table = np.unique(gt.image_ids)
    pos = np.clip(np.searchsorted(table, images), 0, max(len(table) - 1, 0))
    known = table[pos] == images if len(table) else np.zeros(len(images), bool)
    return pos, known


def voc_match(
    gt: GroundTruth, dets: Detections, iou_threshold: float = IOU_THRESHOLD
) -> tuple[BoolArray, BoolArray]:
    """Per detection (input order): (true positive, false positive). Both False means matched a difficult truth."""
    assert gt.difficult is not None
    d_pos, d_known = _image_positions(gt, dets.image)
    if not d_known.all():
        raise ValueError("detections refer to images absent from the ground truth")
    g_pos, g_known = _image_positions(gt, gt.box_image)
    n_cat_key = int(max(gt.box_category.max(initial=0), dets.category.max(initial=0))) + 1
    g_group = np.where(g_known, g_pos * n_cat_key + gt.box_category, -1)
    d_group = d_pos * n_cat_key + dets.category
    pair_det, pair_gt = pairs_within_groups(d_group, g_group)
    ious = pair_iou(dets.boxes[pair_det], gt.boxes[pair_gt], pixel_inclusive=gt.pixel_inclusive)

    n = len(dets)
    best_iou = np.full(n, -np.inf)
    np.maximum.at(best_iou, pair_det, ious)
    # First truth (in annotation order) reaching the maximum: pairs are ordered by detection then truth.
    is_best = ious == best_iou[pair_det]
    best_gt = np.full(n, -1, dtype=np.int64)
    hits = np.flatnonzero(is_best)
    first_hit = np.r_[True, pair_det[hits][1:] != pair_det[hits][:-1]] if hits.size else hits.astype(bool)
    best_gt[pair_det[hits[first_hit]]] = pair_gt[hits[first_hit]]

    over = best_iou >= iou_threshold
    difficult = np.zeros(n, bool)
    difficult[over] = gt.difficult[best_gt[over]]
    # Confidence order within each class decides which detection claims a truth first (stable, as Matlab sort).
    order = np.lexsort((np.arange(n), -dets.scores))
    candidate = over & ~difficult
    claimed = np.zeros(n, bool)
    ordered = order[candidate[order]]
    _, first_idx = np.unique(best_gt[ordered], return_index=True)
    claimed[ordered[first_idx]] = True
    tp = claimed
    fp = ~claimed & ~(over & difficult)
    return tp, fp


def evaluate_voc(
    gt: GroundTruth, dets: Detections, *, eleven_point: bool, iou_threshold: float = IOU_THRESHOLD
) -> dict[str, Any]:
    """mAP and AP per class name. Classes without a non-difficult truth have no AP and stay out of the mean."""
    assert gt.difficult is not None
    tp, fp = voc_match(gt, dets, iou_threshold)
    images = set(gt.image_ids.tolist())
    listed = np.fromiter((i in images for i in gt.box_image.tolist()), bool, len(gt.box_image))
    per_class: dict[str, float] = {}
    for cat in np.unique(gt.category_ids):
        n_pos = int(np.count_nonzero((gt.box_category == cat) & ~gt.difficult & listed))
        if n_pos == 0:
            continue
        idx = np.flatnonzero(dets.category == cat)
        idx = idx[np.argsort(-dets.scores[idx], kind="stable")]
        per_class[gt.name_of(int(cat))] = average_precision(tp[idx], fp[idx], n_pos, eleven_point)
    m_ap = float(np.mean(list(per_class.values()))) if per_class else 0.0
    return {"mAP": m_ap, "AP_per_class": per_class}


def evaluate_voc07(gt: GroundTruth, dets: Detections) -> dict[str, Any]:
    return evaluate_voc(gt, dets, eleven_point=True)


def evaluate_voc12(gt: GroundTruth, dets: Detections) -> dict[str, Any]:
    return evaluate_voc(gt, dets, eleven_point=False)
