"""PASCAL VOC detection AP: the 2007 11-point rule and the 2010+ all-point rule, with "difficult" objects.

Matching follows VOCdevkit ``VOCevaldet.m``: detections of a class in decreasing confidence (file order on
ties) each look at the truth of highest overlap in their image (first one on ties); IoU >= 0.5 with a free
truth is a true positive (exactly 0.5 counts, the devkit's ``ovmax >= minoverlap``), with an already detected
truth a false positive, with a difficult truth neither. Boxes are scored as submitted, past the border or not
(the devkit clips nothing). With pixel-inclusive truth (VOC and ILSVRC exports) widths, heights and
intersections get the devkit's +1 (``x2 - x1 + 1``); against continuous (COCO) truth they do not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .data import BoolArray, Detections, FloatArray, GroundTruth, IntArray, expand_rows
from .matching import pair_iou, pairs_within_groups

IOU_THRESHOLD = 0.5
# The VOC2007 devkit's recall levels ``t=0:0.1:1`` as Matlab's colon operator builds them: the first half as
# 0 + k*0.1, the second as 1 - k*0.1. So level 0.3 is 3*0.1 = 0.30000000000000004 (a recall of exactly 3/10
# does not reach it) while 0.6 and 0.7 are the doubles nearest 0.6 and 0.7 (3/5 and 7/10 reach them; the
# np.arange/linspace levels 0.6000000000000001 and 0.7000000000000001 of Python ports miss them).
ELEVEN_POINTS = np.array([k * 0.1 for k in range(6)] + [1.0 - k * 0.1 for k in range(4, -1, -1)])


def average_precision(tp: BoolArray, fp: BoolArray, n_pos: int, eleven_point: bool) -> float:
    """AP of detections already sorted by decreasing confidence (VOCdevkit ``VOCevaldet.m`` / ``VOCap.m``).

    A detection matching a difficult truth (neither flag) has no precision in the devkit (0/0, which Matlab's
    ``max`` skips); 0 here gives the same AP whenever the class has any scored detection.
    """
    tp_sum = np.cumsum(tp).astype(np.float64)
    fp_sum = np.cumsum(fp).astype(np.float64)
    rec = tp_sum / n_pos
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = tp_sum / (tp_sum + fp_sum)
    prec = np.nan_to_num(prec)
    if eleven_point:
        # VOC2007: best precision at recall >= level (0 when unreachable), added up as ``ap=ap+p/11``.
        ap = 0.0
        for level in ELEVEN_POINTS:
            reached = prec[rec >= level]
            ap += (float(reached.max()) if reached.size else 0.0) / 11
        return ap
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


@dataclass(frozen=True)
class DetectionFlags:
    """True/false positive flags per detection and the counted truths, the input of per-class AP.

    Matching stays within images, so the flags hold for any resampling of the images (the bootstrap
    re-accumulates them). Image fields are positions in the sorted image ids.
    """

    categories: IntArray
    names: tuple[str, ...]
    det_image: IntArray
    det_category: IntArray
    det_score: FloatArray
    tp: BoolArray
    fp: BoolArray
    gt_image: IntArray  # counted truths only (not difficult, not blacklisted)
    gt_category: IntArray


def ap_per_class(flags: DetectionFlags, eleven_point: bool, sample: IntArray | None = None) -> dict[str, Any]:
    """mAP and AP per class name; classes without a counted truth have no AP and stay out of the mean.

    ``sample`` (image positions, with repeats) scores a bootstrap draw as if it were evaluated afresh.
    """
    rows = np.arange(len(flags.det_image))
    g_category = flags.gt_category
    if sample is not None:
        rows, _ = expand_rows(flags.det_image, sample)
        g_rows, _ = expand_rows(flags.gt_image, sample)
        g_category = g_category[g_rows]
    # Per class, decreasing score; equal scores keep input order (Matlab's sort is stable).
    cat = np.searchsorted(flags.categories, flags.det_category[rows])
    rank = np.empty(len(rows), dtype=np.int64)
    rank[np.argsort(-flags.det_score[rows], kind="stable")] = np.arange(len(rows))
    rows = rows[np.argsort(cat * max(len(rows), 1) + rank)]
    bounds = np.searchsorted(
        np.searchsorted(flags.categories, flags.det_category[rows]), np.arange(len(flags.categories) + 1)
    )
    n_pos = np.bincount(np.searchsorted(flags.categories, g_category), minlength=len(flags.categories))
    per_class: dict[str, float] = {}
    for k, name in enumerate(flags.names):
        if n_pos[k] == 0:
            continue
        idx = rows[bounds[k] : bounds[k + 1]]
        per_class[name] = average_precision(flags.tp[idx], flags.fp[idx], int(n_pos[k]), eleven_point)
    m_ap = float(np.mean(list(per_class.values()))) if per_class else 0.0
    return {"mAP": m_ap, "AP_per_class": per_class}


def voc_flags(gt: GroundTruth, dets: Detections, iou_threshold: float = IOU_THRESHOLD) -> DetectionFlags:
    assert gt.difficult is not None
    tp, fp = voc_match(gt, dets, iou_threshold)
    table = np.unique(gt.image_ids)
    g_pos, g_known = _image_positions(gt, gt.box_image)
    counted = g_known & ~gt.difficult
    categories = np.unique(gt.category_ids)
    # Detections of classes outside the benchmark are not scored.
    known_cat = np.isin(dets.category, categories)
    return DetectionFlags(
        categories=categories,
        names=tuple(gt.name_of(int(c)) for c in categories),
        det_image=np.searchsorted(table, dets.image[known_cat]),
        det_category=dets.category[known_cat],
        det_score=dets.scores[known_cat],
        tp=tp[known_cat],
        fp=fp[known_cat],
        gt_image=g_pos[counted],
        gt_category=gt.box_category[counted],
    )


def evaluate_voc(
    gt: GroundTruth, dets: Detections, *, eleven_point: bool, iou_threshold: float = IOU_THRESHOLD
) -> dict[str, Any]:
    """mAP and AP per class name. Classes without a non-difficult truth have no AP and stay out of the mean."""
    return ap_per_class(voc_flags(gt, dets, iou_threshold), eleven_point)


def voc_resampler(
    gt: GroundTruth, dets: Detections, eleven_point: bool
) -> Callable[[IntArray], dict[str, Any]]:
    """Scores of bootstrap draws (image ids, with repeats), matching once."""
    flags = voc_flags(gt, dets)
    table = np.unique(gt.image_ids)
    return lambda sample_ids: ap_per_class(flags, eleven_point, np.searchsorted(table, sample_ids))


def evaluate_voc07(gt: GroundTruth, dets: Detections) -> dict[str, Any]:
    return evaluate_voc(gt, dets, eleven_point=True)


def evaluate_voc12(gt: GroundTruth, dets: Detections) -> dict[str, Any]:
    return evaluate_voc(gt, dets, eleven_point=False)
