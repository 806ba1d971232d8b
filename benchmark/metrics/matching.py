"""Box overlap and greedy detection-to-truth matching, vectorized across images, classes and IoU thresholds.

Shared by the COCO and ILSVRC protocols, whose greedy rules (ILSVRC §4.3 Algorithm 2, COCOeval.evaluateImg)
differ only in thresholds, tie-breaking and "ignore" regions.
"""

from __future__ import annotations

import numpy as np

from .data import BoolArray, FloatArray, IntArray


def pair_iou(
    det_boxes: FloatArray,
    gt_boxes: FloatArray,
    crowd: BoolArray | None = None,
    pixel_inclusive: bool = False,
) -> FloatArray:
    """IoU of row-aligned (detection, truth) pairs of ``[x, y, w, h]`` boxes.

    The arithmetic follows pycocotools' maskApi ``bbIou`` operation by operation so thresholds compare equal
    bit for bit. For a crowd truth the union is the detection's area (COCO). ``pixel_inclusive`` applies the
    VOC/ILSVRC devkit rule that a box from x1 to x2 spans ``x2 - x1 + 1`` pixels.
    """
    dx, dy, dw, dh = det_boxes.T
    gx, gy, gw, gh = gt_boxes.T
    one = 1.0 if pixel_inclusive else 0.0
    iw = np.minimum(dw + dx, gw + gx) - np.maximum(dx, gx) + one
    ih = np.minimum(dh + dy, gh + gy) - np.maximum(dy, gy) + one
    d_area = (dw + one) * (dh + one)
    g_area = (gw + one) * (gh + one)
    inter = iw * ih
    union = d_area + g_area - inter
    if crowd is not None:
        union = np.where(crowd, d_area, union)
    overlap = (iw > 0) & (ih > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(overlap, inter / np.where(overlap, union, 1.0), 0.0)


def pairs_within_groups(det_group: IntArray, gt_group: IntArray) -> tuple[IntArray, IntArray]:
    """All (detection, truth) index pairs sharing a group, ordered by detection then truth index."""
    gt_order = np.argsort(gt_group, kind="stable")
    sorted_groups = gt_group[gt_order]
    starts = np.searchsorted(sorted_groups, det_group, side="left")
    counts = np.searchsorted(sorted_groups, det_group, side="right") - starts
    total = int(counts.sum())
    pair_det = np.repeat(np.arange(len(det_group), dtype=np.int64), counts)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    pair_gt = gt_order[np.repeat(starts, counts) + offsets]
    return pair_det, pair_gt


def greedy_match(
    det_group: IntArray,
    pair_det: IntArray,
    pair_gt: IntArray,
    pair_iou_values: FloatArray,
    pair_ok: BoolArray,
    gt_ignore: BoolArray,
    gt_reusable: BoolArray,
    prefer_last: bool,
) -> tuple[IntArray, IntArray]:
    """Greedy matching of detections to truths, for S settings (thresholds, ignore flags) at once.

    Detections are processed within each group (an image and class) in increasing index order, so the caller
    orders them by decreasing confidence. Each takes, among truths still free (or reusable, e.g. COCO crowds)
    whose pair passes ``pair_ok[t]``, the one of highest IoU; truths not ignored win over ignored ones
    (COCOeval sorts ignored truths last and stops there once a regular match exists). Equal IoUs go to the
    last truth in index order when ``prefer_last`` (COCOeval's ``>=`` scan) else to the first (ILSVRC devkit's
    strict ``>``). Pairs must be sorted by detection then truth index.

    ``pair_ok`` is (S, P); ``gt_ignore`` is (S, G) or (G,). Returns the candidate detections (those with a
    passing pair) and their (S, C) truth indices, -1 where unmatched; every other detection is unmatched.
    Groups are independent, so the k-th candidate of every group is matched in one vectorized step.
    """
    n_thr = pair_ok.shape[0]
    ignore = np.broadcast_to(gt_ignore, (n_thr, len(gt_reusable)))
    n_det = len(det_group)
    keep = pair_ok.any(axis=0)
    if not keep.any():
        return np.zeros(0, dtype=np.int64), np.zeros((n_thr, 0), dtype=np.int64)
    pair_det, pair_gt, pair_iou_values = pair_det[keep], pair_gt[keep], pair_iou_values[keep]
    pair_ok = pair_ok[:, keep]

    # Rank of each candidate detection among the candidates of its group, in processing order.
    cand = np.unique(pair_det)
    cand_group = det_group[cand]
    order = np.lexsort((cand, cand_group))
    cand, cand_group = cand[order], cand_group[order]
    first = np.r_[True, cand_group[1:] != cand_group[:-1]]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(cand)), 0))
    rank = np.empty(n_det, dtype=np.int64)
    rank[cand] = np.arange(len(cand)) - group_start
    slot = np.empty(n_det, dtype=np.int64)
    slot[cand] = np.arange(len(cand))
    result = np.full((n_thr, len(cand)), -1, dtype=np.int64)

    pair_rank = rank[pair_det]
    by_rank = np.argsort(pair_rank, kind="stable")
    bounds = np.searchsorted(pair_rank[by_rank], np.arange(int(pair_rank.max()) + 2))
    n_gt = len(gt_reusable)
    taken = np.zeros((n_thr, n_gt), dtype=bool)
    for r in range(len(bounds) - 1):
        block = by_rank[bounds[r] : bounds[r + 1]]
        b_det, b_gt, b_iou, b_ok = pair_det[block], pair_gt[block], pair_iou_values[block], pair_ok[:, block]
        new_det = np.r_[True, b_det[1:] != b_det[:-1]]
        row = np.cumsum(new_det) - 1
        row_start = np.flatnonzero(new_det)
        col = np.arange(len(block)) - row_start[row]
        n_rows, n_cols = len(row_start), int(col.max()) + 1
        m_gt = np.zeros((n_rows, n_cols), dtype=np.int64)
        m_iou = np.full((n_rows, n_cols), -np.inf)
        m_ok = np.zeros((n_thr, n_rows, n_cols), dtype=bool)
        m_gt[row, col] = b_gt
        m_iou[row, col] = b_iou
        m_ok[:, row, col] = b_ok
        eligible = m_ok & (~taken[:, m_gt] | gt_reusable[m_gt])
        preferred = eligible & ~ignore[:, m_gt]
        use = np.where(preferred.any(axis=2, keepdims=True), preferred, eligible)
        score = np.where(use, m_iou, -np.inf)
        best = score.max(axis=2, keepdims=True)
        is_best = use & (score == best)
        if prefer_last:
            k = n_cols - 1 - np.argmax(is_best[:, :, ::-1], axis=2)
        else:
            k = np.argmax(is_best, axis=2)
        t_idx, r_idx = np.nonzero(use.any(axis=2))
        chosen = m_gt[r_idx, k[t_idx, r_idx]]
        taken[t_idx, chosen] = True
        result[t_idx, slot[b_det[row_start[r_idx]]]] = chosen
    return cand, result
