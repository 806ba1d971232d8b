"""COCO bounding-box AP (AP@[.5:.95], AP50, AP75, APs, APm, APl), numerically identical to pycocotools.

Follows COCOeval (evaluate, evaluateImg, accumulate, summarize) rule for rule, but matches every image and
class at once with numpy instead of one Python loop per detection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .data import Detections, FloatArray, GroundTruth, category_name_map
from .matching import greedy_match, pair_iou, pairs_within_groups

# COCOeval.Params (bbox): the same expressions, so the floats are the same.
IOU_THRESHOLDS = np.linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1, endpoint=True)
RECALL_THRESHOLDS = np.linspace(0.0, 1.00, int(np.round((1.00 - 0.0) / 0.01)) + 1, endpoint=True)
AREA_RANGES = (
    (0.0, 1e5**2),
    (0.0, 32.0**2),
    (32.0**2, 96.0**2),
    (96.0**2, 1e5**2),
)  # all, small, medium, large
MAX_DETS = 100  # stats[0:6] all use maxDets=100
STAT_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl")


def ground_truth_from_coco(dataset: Mapping[str, Any]) -> GroundTruth:
    """GroundTruth from a COCO annotation dict (images, annotations, categories)."""
    images = dataset.get("images", [])
    anns = dataset.get("annotations", [])
    cats = dataset.get("categories", [])
    sizes = {
        int(im["id"]): (float(im["width"]), float(im["height"]))
        for im in images
        if "width" in im and "height" in im
    }
    boxes = np.array([a["bbox"] for a in anns], dtype=np.float64).reshape(-1, 4)
    return GroundTruth(
        image_ids=np.array([im["id"] for im in images]),
        category_ids=np.array([c["id"] for c in cats]),
        box_image=np.array([a["image_id"] for a in anns]),
        box_category=np.array([a["category_id"] for a in anns]),
        boxes=boxes,
        # pycocotools uses the annotation's own 'area' (the segment's), not the box's.
        area=np.array([a["area"] if "area" in a else a["bbox"][2] * a["bbox"][3] for a in anns]),
        iscrowd=np.array([bool(a.get("iscrowd", 0)) for a in anns], dtype=bool),
        difficult=np.array([bool(a.get("difficult", 0) or a.get("ignore", 0)) for a in anns], dtype=bool),
        ann_ids=np.array([a.get("id", k + 1) for k, a in enumerate(anns)]),
        category_names=category_name_map(cats),
        image_sizes=sizes or None,
    )


def detections_from_coco(results: Sequence[Mapping[str, Any]]) -> Detections:
    """Detections from a COCO results list of ``{image_id, category_id, bbox, score}`` (already validated)."""
    n = len(results)
    image = np.fromiter((r["image_id"] for r in results), dtype=np.int64, count=n)
    category = np.fromiter((r["category_id"] for r in results), dtype=np.int64, count=n)
    scores = np.fromiter((r["score"] for r in results), dtype=np.float64, count=n)
    boxes = np.array([r["bbox"] for r in results], dtype=np.float64).reshape(-1, 4)
    return Detections(image, category, boxes, scores)


def _summarize(precision: FloatArray, t_index: int | None, area_index: int) -> float:
    s = precision[:, :, :, area_index]
    if t_index is not None:
        s = s[t_index : t_index + 1]
    valid = s[s > -1]
    return -1.0 if valid.size == 0 else float(np.mean(valid))


def coco_precision(gt: GroundTruth, dets: Detections) -> FloatArray:
    """COCOeval's ``eval['precision'][:, :, :, :, maxDets=100]``: (T, R, K, A), -1 where undefined."""
    assert gt.area is not None and gt.iscrowd is not None and gt.ann_ids is not None
    image_ids = np.unique(gt.image_ids)
    cat_ids = np.unique(gt.category_ids)
    n_cat = len(cat_ids)

    def index_of(values: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pos = np.clip(np.searchsorted(table, values), 0, max(len(table) - 1, 0))
        known = (table[pos] == values) if len(table) else np.zeros(len(values), bool)
        return pos, known

    # Truth on unlisted images or classes is not evaluated (COCO.getAnnIds filters them out).
    g_img, g_ok1 = index_of(gt.box_image, image_ids)
    g_cat, g_ok2 = index_of(gt.box_category, cat_ids)
    g_keep = np.flatnonzero(g_ok1 & g_ok2)
    g_img, g_cat = g_img[g_keep], g_cat[g_keep]
    g_boxes, g_area = gt.boxes[g_keep], gt.area[g_keep]
    g_crowd = gt.iscrowd[g_keep]
    g_id_nonzero = gt.ann_ids[g_keep] != 0
    g_group = g_img * n_cat + g_cat

    d_img, d_ok1 = index_of(dets.image, image_ids)
    if not d_ok1.all():
        raise ValueError("detections refer to images absent from the ground truth")
    d_cat, d_ok2 = index_of(dets.category, cat_ids)
    d_keep = np.flatnonzero(d_ok2)  # detections of unknown classes are dropped, as in COCOeval._prepare
    d_img, d_cat = d_img[d_keep], d_cat[d_keep]
    d_scores = dets.scores[d_keep]
    d_group = d_img * n_cat + d_cat
    # Within an (image, class): stable sort by decreasing score, keep the first maxDets.
    order = np.lexsort((np.arange(len(d_keep)), -d_scores, d_group))
    sorted_group = d_group[order]
    first = np.r_[True, sorted_group[1:] != sorted_group[:-1]] if len(order) else np.zeros(0, bool)
    start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0)) if len(order) else first
    rank_all = np.arange(len(order)) - start
    order = order[rank_all < MAX_DETS]
    d_rank = rank_all[rank_all < MAX_DETS]
    d_img, d_cat, d_group, d_scores = d_img[order], d_cat[order], d_group[order], d_scores[order]
    d_boxes = dets.boxes[d_keep][order]
    d_area = d_boxes[:, 2] * d_boxes[:, 3]

    pair_det, pair_gt = pairs_within_groups(d_group, g_group)
    ious = pair_iou(d_boxes[pair_det], g_boxes[pair_gt], g_crowd[pair_gt])
    near = ious >= IOU_THRESHOLDS[0]
    pair_det, pair_gt, ious = pair_det[near], pair_gt[near], ious[near]
    thresholds = np.minimum(IOU_THRESHOLDS, 1 - 1e-10)
    pair_ok = ious[None, :] >= thresholds[:, None]

    # Per class, detections in accumulate's order: score, then image id, then rank within the image.
    acc_order = np.lexsort((d_rank, d_img, -d_scores, d_cat))
    acc_cat = d_cat[acc_order]
    cat_bounds = np.searchsorted(acc_cat, np.arange(n_cat + 1))

    n_thr, n_rec = len(IOU_THRESHOLDS), len(RECALL_THRESHOLDS)
    precision = -np.ones((n_thr, n_rec, n_cat, len(AREA_RANGES)))
    for a, (lo, hi) in enumerate(AREA_RANGES):
        g_ignore = g_crowd | (g_area < lo) | (g_area > hi)
        match = greedy_match(d_group, pair_det, pair_gt, ious, pair_ok, g_ignore, g_crowd, prefer_last=True)
        matched = match >= 0
        safe = np.where(matched, match, 0)
        d_ignore = matched & g_ignore[safe]
        # COCOeval stores the truth's id as the match, so a truth with id 0 reads as "no match".
        matched &= g_id_nonzero[safe] if len(g_id_nonzero) else matched
        d_out = (d_area < lo) | (d_area > hi)
        d_ignore |= ~matched & d_out[None, :]
        n_pos = np.bincount(g_cat[~g_ignore], minlength=n_cat)
        tps = (matched & ~d_ignore)[:, acc_order]
        fps = (~matched & ~d_ignore)[:, acc_order]
        for k in range(n_cat):
            if n_pos[k] == 0:
                continue
            lo_k, hi_k = cat_bounds[k], cat_bounds[k + 1]
            n_d = hi_k - lo_k
            if n_d == 0:
                precision[:, :, k, a] = 0.0
                continue
            tp = np.cumsum(tps[:, lo_k:hi_k], axis=1).astype(np.float64)
            fp = np.cumsum(fps[:, lo_k:hi_k], axis=1).astype(np.float64)
            rc = tp / n_pos[k]
            pr = tp / (fp + tp + np.spacing(1))
            pr = np.maximum.accumulate(pr[:, ::-1], axis=1)[:, ::-1]
            for t in range(n_thr):
                inds = np.searchsorted(rc[t], RECALL_THRESHOLDS, side="left")
                inside = inds < n_d
                q = np.zeros(n_rec)
                q[inside] = pr[t, inds[inside]]
                precision[t, :, k, a] = q
    return precision


def evaluate_coco(gt: GroundTruth, dets: Detections) -> dict[str, float]:
    """AP, AP50, AP75, APs, APm, APl as COCOeval.summarize() stats[0:6] (maxDets 100; -1 when undefined)."""
    precision = coco_precision(gt, dets)
    t50 = int(np.flatnonzero(IOU_THRESHOLDS == 0.5)[0])
    t75 = int(np.flatnonzero(IOU_THRESHOLDS == 0.75)[0])
    return {
        "AP": _summarize(precision, None, 0),
        "AP50": _summarize(precision, t50, 0),
        "AP75": _summarize(precision, t75, 0),
        "APs": _summarize(precision, None, 1),
        "APm": _summarize(precision, None, 2),
        "APl": _summarize(precision, None, 3),
    }


def evaluate_coco_dicts(dataset: Mapping[str, Any], results: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Convenience: COCO annotation dict + results list -> stats dict."""
    return evaluate_coco(ground_truth_from_coco(dataset), detections_from_coco(results))
