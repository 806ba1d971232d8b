"""COCO bounding-box AP and AR (the 12 stats of COCOeval.summarize()), numerically identical to pycocotools.

Follows COCOeval (evaluate, evaluateImg, accumulate, summarize) rule for rule, but matches every image and
class at once with numpy instead of one Python loop per detection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .data import BoolArray, Detections, FloatArray, GroundTruth, IntArray, category_name_map, expand_rows
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
MAX_DETS_LEVELS = (1, 10, 100)  # COCOeval.Params.maxDets
MAX_DETS = MAX_DETS_LEVELS[-1]  # the AP stats and AR by area use maxDets=100
AP_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl")
AR_NAMES = ("AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
STAT_NAMES = AP_NAMES + AR_NAMES  # the order of COCOeval.stats


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
    """Detections from a COCO results list of ``{image_id, category_id, bbox, score}`` (already validated).

    Boxes are kept as given, past the border or not, as pycocotools' ``loadRes`` keeps them: IoU is of the
    raw boxes and a detection's area (for the area ranges) is the raw ``w * h``.
    """
    n = len(results)
    image = np.fromiter((r["image_id"] for r in results), dtype=np.int64, count=n)
    category = np.fromiter((r["category_id"] for r in results), dtype=np.int64, count=n)
    scores = np.fromiter((r["score"] for r in results), dtype=np.float64, count=n)
    boxes = np.array([r["bbox"] for r in results], dtype=np.float64).reshape(-1, 4)
    return Detections(image, category, boxes, scores)


def _summarize(values: FloatArray, t_index: int | None = None) -> float:
    """COCOeval.summarize's mean over the defined entries (``> -1``), in the same array order (same floats)."""
    s = values if t_index is None else values[t_index : t_index + 1]
    valid = s[s > -1]
    return -1.0 if valid.size == 0 else float(np.mean(valid))


def _stable_rank(values: FloatArray) -> IntArray:
    """Position of each value in a stable ascending sort (ties keep input order)."""
    rank = np.empty(len(values), dtype=np.int64)
    rank[np.argsort(values, kind="stable")] = np.arange(len(values))
    return rank


def _rank_in_runs(sorted_keys: IntArray) -> IntArray:
    """0, 1, 2, ... within each run of equal consecutive keys."""
    if len(sorted_keys) == 0:
        return np.zeros(0, dtype=np.int64)
    first = np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(sorted_keys)), 0))
    return np.arange(len(sorted_keys)) - start


def _interpolated_precision(tps: BoolArray, fps: BoolArray, n_pos: IntArray) -> FloatArray:
    """101-point interpolated precision of each row (COCOeval.accumulate), rows sorted by confidence.

    Same floats as pycocotools: precision is ``tp / (fp + tp + eps)``, made non-increasing from the right,
    and read at the first detection whose recall ``tp / n_pos`` reaches each recall threshold (0 if none).
    """
    n_rows, n_d = tps.shape
    if n_d == 0:
        return np.zeros((n_rows, len(RECALL_THRESHOLDS)))
    tp = np.cumsum(tps, axis=1).astype(np.float64)
    fp = np.cumsum(fps, axis=1).astype(np.float64)
    pr = tp / (fp + tp + np.spacing(1))
    pr = np.maximum.accumulate(pr[:, ::-1], axis=1)[:, ::-1]
    # searchsorted(recall, thr, "left") without a call per row: float division is monotone in the
    # numerator, so recall < thr exactly when tp < m, m being the least integer with m / n_pos >= thr.
    npos = n_pos.astype(np.float64)[:, None]
    m = np.ceil(RECALL_THRESHOLDS[None, :] * npos).astype(np.int64)
    for _ in range(2):
        m = np.where((m > 0) & ((m - 1) / npos >= RECALL_THRESHOLDS), m - 1, m)
        m = np.where(m / npos < RECALL_THRESHOLDS, m + 1, m)
    # The first position with tp >= m is where the m-th true positive sits.
    tp_row, tp_pos = np.nonzero(tps)
    row_start = np.searchsorted(tp_row, np.arange(n_rows))
    total = tp[:, -1].astype(np.int64)[:, None]
    at = np.clip(row_start[:, None] + m - 1, 0, max(len(tp_pos) - 1, 0))
    pos_of_mth = tp_pos[at] if len(tp_pos) else np.zeros_like(m)
    inds = np.where(m == 0, 0, np.where(m <= total, pos_of_mth, n_d))
    inside = inds < n_d
    return np.where(inside, np.take_along_axis(pr, np.minimum(inds, n_d - 1), axis=1), 0.0)


@dataclass(frozen=True)
class CocoMatches:
    """Outcome of matching, per detection in accumulate order (class, score, image, rank in image).

    Matching happens within images, so these flags hold for any resampling of the images: the bootstrap
    re-accumulates them instead of matching again.
    """

    det_image: IntArray  # position of the image in the sorted image ids
    det_cat: IntArray  # position of the class in the sorted class ids
    det_score_rank: IntArray  # dense rank of decreasing score (equal scores share a rank)
    det_rank: IntArray  # place among the detections of its (image, class) by decreasing score (maxDets cut)
    tps: BoolArray  # (A * T, D): true positive at area range a, IoU threshold t
    fps: BoolArray
    pos_counts: IntArray  # (A, images, classes): truths not ignored
    n_cat: int


def coco_match(gt: GroundTruth, dets: Detections) -> CocoMatches:
    """COCOeval.evaluate() for every image, class, area range and IoU threshold at once."""
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
    d_img, d_cat, d_scores = d_img[d_keep], d_cat[d_keep], dets.scores[d_keep]
    n = len(d_keep)
    # Within an (image, class): stable sort by decreasing score, keep the first maxDets (computeIoU).
    # Sorting a unique integer key (group, stable score rank) is much faster than a lexsort.
    order = (
        np.argsort(d_img * n_cat + d_cat)
        if n == 0
        else np.argsort((d_img * n_cat + d_cat) * n + _stable_rank(-d_scores))
    )
    sorted_group = (d_img * n_cat + d_cat)[order]
    rank = _rank_in_runs(sorted_group)
    order, rank = order[rank < MAX_DETS], rank[rank < MAX_DETS]
    # Then put the kept detections in accumulate's order: per class by score, ties by image id then rank.
    # Within an (image, class) this is still decreasing score, the order greedy matching needs.
    n = len(order)
    acc = np.argsort(d_cat[order] * n + _stable_rank(-d_scores[order])) if n else order
    sel = d_keep[order[acc]]
    d_rank = rank[acc]
    d_img, d_cat, d_scores = d_img[order[acc]], d_cat[order[acc]], d_scores[order[acc]]
    d_group = d_img * n_cat + d_cat
    d_boxes = dets.boxes[sel]
    d_area = d_boxes[:, 2] * d_boxes[:, 3]

    pair_det, pair_gt = pairs_within_groups(d_group, g_group)
    ious = pair_iou(d_boxes[pair_det], g_boxes[pair_gt], g_crowd[pair_gt])
    near = ious >= IOU_THRESHOLDS[0]
    pair_det, pair_gt, ious = pair_det[near], pair_gt[near], ious[near]
    thresholds = np.minimum(IOU_THRESHOLDS, 1 - 1e-10)
    pair_ok = ious[None, :] >= thresholds[:, None]

    # All area ranges x IoU thresholds are matched in one pass: setting s = area * T + t.
    n_thr, n_area = len(IOU_THRESHOLDS), len(AREA_RANGES)
    g_ignore = np.stack([g_crowd | (g_area < lo) | (g_area > hi) for lo, hi in AREA_RANGES])
    cand, match = greedy_match(
        d_group,
        pair_det,
        pair_gt,
        ious,
        np.tile(pair_ok, (n_area, 1)),
        np.repeat(g_ignore, n_thr, axis=0),
        g_crowd,
        prefer_last=True,
    )
    n_set = n_area * n_thr
    hit = match >= 0
    safe = np.where(hit, match, 0)
    setting = np.arange(n_set)[:, None]
    # A detection matched to an ignored truth is ignored; COCOeval stores the truth's id as the match, so a
    # truth with id 0 reads as "no match".
    cand_ignore = hit & np.repeat(g_ignore, n_thr, axis=0)[setting, safe]
    if len(g_id_nonzero):
        hit &= g_id_nonzero[safe]
    matched = np.zeros((n_set, n), dtype=bool)
    matched[:, cand] = hit
    d_ignore = np.zeros((n_set, n), dtype=bool)
    d_ignore[:, cand] = cand_ignore
    # Unmatched detections outside the area range are ignored too.
    d_out = np.stack([(d_area < lo) | (d_area > hi) for lo, hi in AREA_RANGES])
    d_ignore |= ~matched & np.repeat(d_out, n_thr, axis=0)
    tps = matched & ~d_ignore
    fps = ~matched & ~d_ignore

    pos_counts = np.zeros((n_area, len(image_ids), n_cat), dtype=np.int64)
    for a in range(n_area):
        np.add.at(pos_counts[a], (g_img[~g_ignore[a]], g_cat[~g_ignore[a]]), 1)
    score_rank = np.unique(-d_scores, return_inverse=True)[1].reshape(-1) if n else np.zeros(0, np.int64)
    return CocoMatches(d_img, d_cat, score_rank, d_rank, tps, fps, pos_counts, n_cat)


def coco_accumulate(m: CocoMatches, sample: IntArray | None = None) -> tuple[FloatArray, FloatArray]:
    """COCOeval.accumulate(): precision (T, R, K, A) at maxDets=100 and recall (T, K, A, M) at each maxDets,
    both -1 where a class has no (unignored) truth.

    Recall at maxDets m counts the true positives among the first m detections of each image and class (the
    matching itself was done with 100, as COCOeval does), over the truths: ``tp / npig``.
    ``sample`` (image positions, with repeats) evaluates a bootstrap draw; a repeated image counts twice and
    ranks, on equal scores, by its place in the draw, exactly as if the draw had been evaluated afresh.
    """
    n_thr, n_rec, n_area = len(IOU_THRESHOLDS), len(RECALL_THRESHOLDS), len(AREA_RANGES)
    if sample is None:
        tps, fps, det_cat, det_rank = m.tps, m.fps, m.det_cat, m.det_rank
        n_pos = m.pos_counts.sum(axis=1)
    else:
        rows, _ = expand_rows(m.det_image, sample)
        # Rows come out by draw, then in accumulate order; a stable sort on (class, score) finishes the job.
        key = m.det_cat[rows] * (int(m.det_score_rank.max(initial=0)) + 1) + m.det_score_rank[rows]
        rows = rows[np.argsort(key, kind="stable")]
        tps, fps, det_cat, det_rank = m.tps[:, rows], m.fps[:, rows], m.det_cat[rows], m.det_rank[rows]
        n_pos = m.pos_counts[:, sample, :].sum(axis=1)
    cat_bounds = np.searchsorted(det_cat, np.arange(m.n_cat + 1))
    precision = -np.ones((n_thr, n_rec, m.n_cat, n_area))
    recall = -np.ones((n_thr, m.n_cat, n_area, len(MAX_DETS_LEVELS)))
    for k in range(m.n_cat):
        rows_k = np.flatnonzero(np.repeat(n_pos[:, k], n_thr) > 0)  # settings where the class has truth
        if rows_k.size == 0:
            continue
        lo, hi = cat_bounds[k], cat_bounds[k + 1]
        n_pos_k = np.repeat(n_pos[:, k], n_thr)[rows_k]
        tps_k = tps[rows_k, lo:hi]
        q = _interpolated_precision(tps_k, fps[rows_k, lo:hi], n_pos_k)
        precision[rows_k % n_thr, :, k, rows_k // n_thr] = q
        for level, max_dets in enumerate(MAX_DETS_LEVELS):
            found = tps_k[:, det_rank[lo:hi] < max_dets].sum(axis=1).astype(np.float64)
            recall[rows_k % n_thr, k, rows_k // n_thr, level] = found / n_pos_k
    return precision, recall


def coco_precision(gt: GroundTruth, dets: Detections) -> FloatArray:
    """COCOeval's ``eval['precision'][:, :, :, :, maxDets=100]``: (T, R, K, A), -1 where undefined."""
    return coco_accumulate(coco_match(gt, dets))[0]


def coco_stats(precision: FloatArray, recall: FloatArray) -> dict[str, float]:
    """COCOeval.summarize() stats (bbox): AP at maxDets 100, then AR at maxDets 1, 10, 100 and by area."""
    t50 = int(np.flatnonzero(IOU_THRESHOLDS == 0.5)[0])
    t75 = int(np.flatnonzero(IOU_THRESHOLDS == 0.75)[0])
    last = len(MAX_DETS_LEVELS) - 1
    return {
        "AP": _summarize(precision[:, :, :, 0]),
        "AP50": _summarize(precision[:, :, :, 0], t50),
        "AP75": _summarize(precision[:, :, :, 0], t75),
        "APs": _summarize(precision[:, :, :, 1]),
        "APm": _summarize(precision[:, :, :, 2]),
        "APl": _summarize(precision[:, :, :, 3]),
        "AR1": _summarize(recall[:, :, 0, 0]),
        "AR10": _summarize(recall[:, :, 0, 1]),
        "AR100": _summarize(recall[:, :, 0, last]),
        "ARs": _summarize(recall[:, :, 1, last]),
        "ARm": _summarize(recall[:, :, 2, last]),
        "ARl": _summarize(recall[:, :, 3, last]),
    }


def evaluate_coco(gt: GroundTruth, dets: Detections) -> dict[str, float]:
    """The 12 stats of COCOeval.summarize() for bbox, in its order (``STAT_NAMES``; -1 when undefined):
    AP, AP50, AP75, APs, APm, APl at 100 detections per image, AR1, AR10, AR100, and ARs, ARm, ARl at 100.
    """
    return coco_stats(*coco_accumulate(coco_match(gt, dets)))


def coco_resampler(gt: GroundTruth, dets: Detections) -> Callable[[IntArray], dict[str, float]]:
    """Stats of bootstrap draws (image ids, with repeats), matching once and re-accumulating per draw."""
    matches = coco_match(gt, dets)
    image_ids = np.unique(gt.image_ids)

    def stats_of(sample_ids: IntArray) -> dict[str, float]:
        return coco_stats(*coco_accumulate(matches, np.searchsorted(image_ids, sample_ids)))

    return stats_of


def evaluate_coco_dicts(dataset: Mapping[str, Any], results: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Convenience: COCO annotation dict + results list -> stats dict."""
    return evaluate_coco(ground_truth_from_coco(dataset), detections_from_coco(results))
