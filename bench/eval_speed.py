"""Our COCO bbox evaluation side by side with pycocotools (and faster-coco-eval when installed) on a seeded
set whose detections include a share (default 20%) of boxes past the image border, negative coordinates and
boxes wholly outside among them: every one of the 12 stats, its largest difference, and the timings.

Usage: python bench/eval_speed.py [--images 5000] [--classes 80] [--seed 0] [--border-share 0.2] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from benchmark.metrics.bootstrap import bootstrap  # noqa: E402
from benchmark.metrics.coco import (  # noqa: E402
    STAT_NAMES,
    detections_from_coco,
    evaluate_coco,
    ground_truth_from_coco,
)
from benchmark.metrics.submissions import validate_coco_results  # noqa: E402

WIDTH, HEIGHT = 640, 480


def push_past_border(boxes: np.ndarray, share: float, rng: np.random.Generator) -> np.ndarray:
    """A ``share`` of the boxes moved past an edge: negative x or y, past the right or bottom border, wider
    than the image; one in twenty of those wholly outside. The others are cut to lie inside the image."""
    out = boxes.copy()
    x1 = np.clip(out[:, 0], 0, WIDTH - 1)
    y1 = np.clip(out[:, 1], 0, HEIGHT - 1)
    out[:, 2] = np.minimum(x1 + out[:, 2], WIDTH) - x1
    out[:, 3] = np.minimum(y1 + out[:, 3], HEIGHT) - y1
    out[:, 0], out[:, 1] = x1, y1
    out[:, 2:] = np.maximum(out[:, 2:], 0.5)
    moved = np.flatnonzero(rng.random(len(out)) < share)
    x, y, w, h = (out[moved, k].copy() for k in range(4))
    over = rng.uniform(0.5, 0.6 * np.maximum(w, h) + 2)
    edge = rng.integers(0, 5, len(moved))
    x = np.where(edge == 0, -over, x)
    y = np.where(edge == 1, -over, y)
    x = np.where(edge == 2, WIDTH - w + over, x)
    y = np.where(edge == 3, HEIGHT - h + over, y)
    wide = edge == 4
    x, w = np.where(wide, -over, x), np.where(wide, w + 2 * over + WIDTH * rng.uniform(0, 1, len(moved)), w)
    outside = rng.random(len(moved)) < 0.05
    x = np.where(outside, -w - rng.uniform(0, 20, len(moved)), x)
    out[moved] = np.stack([x, y, w, h], axis=1)
    return out


def synthetic_set(
    n_images: int,
    n_classes: int,
    seed: int,
    boxes_per_image: float = 7.0,
    dets_per_image: float = 100.0,
    border_share: float = 0.2,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """COCO-like truth (~7 boxes/image, some crowds, all sizes) and ~100 scored detections per image.

    About a third of the detections are jittered copies of truth boxes (sometimes with the wrong class), the
    rest are random boxes, so matching, duplicates and false positives all occur; ``border_share`` of them
    reach past the image border (``push_past_border``).
    """
    rng = np.random.default_rng(seed)
    images = [
        {"id": i + 1, "width": WIDTH, "height": HEIGHT, "file_name": f"{i + 1}.jpg"} for i in range(n_images)
    ]
    categories = [{"id": c + 1, "name": f"class{c + 1}", "supercategory": "thing"} for c in range(n_classes)]
    annotations: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for image in images:
        n_gt = int(rng.poisson(boxes_per_image))
        scale = np.exp(rng.uniform(np.log(4), np.log(400), size=(n_gt, 2)))
        w = np.minimum(scale[:, 0], 639.0)
        h = np.minimum(scale[:, 1], 479.0)
        x = rng.uniform(0, 640 - w)
        y = rng.uniform(0, 480 - h)
        cls = rng.integers(1, n_classes + 1, size=n_gt)
        crowd = rng.random(n_gt) < 0.02
        for k in range(n_gt):
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": image["id"],
                    "category_id": int(cls[k]),
                    "bbox": [float(x[k]), float(y[k]), float(w[k]), float(h[k])],
                    "area": float(w[k] * h[k] * rng.uniform(0.6, 1.0)),
                    "iscrowd": int(crowd[k]),
                }
            )
        n_det = int(rng.poisson(dets_per_image))
        n_near = min(n_det // 3, 5 * n_gt) if n_gt else 0
        src = rng.integers(0, max(n_gt, 1), size=n_near)
        jitter = rng.normal(0, 0.12, size=(n_near, 4))
        near = (
            np.stack(
                [
                    x[src] + jitter[:, 0] * w[src],
                    y[src] + jitter[:, 1] * h[src],
                    np.maximum(w[src] * (1 + jitter[:, 2]), 1.0),
                    np.maximum(h[src] * (1 + jitter[:, 3]), 1.0),
                ],
                axis=1,
            )
            if n_near
            else np.zeros((0, 4))
        )
        near_cls = np.where(
            rng.random(n_near) < 0.85, cls[src] if n_gt else 1, rng.integers(1, n_classes + 1, n_near)
        )
        n_far = n_det - n_near
        fw = np.exp(rng.uniform(np.log(4), np.log(400), size=n_far))
        fh = np.exp(rng.uniform(np.log(4), np.log(400), size=n_far))
        far = np.stack([rng.uniform(0, 600, n_far), rng.uniform(0, 440, n_far), fw, fh], axis=1)
        far_cls = rng.integers(1, n_classes + 1, n_far)
        all_boxes = push_past_border(np.concatenate([near, far]), border_share, rng).round(2)
        all_cls = np.concatenate([near_cls, far_cls])
        scores = np.concatenate([rng.uniform(0.3, 1.0, n_near), rng.uniform(0.0, 0.7, n_far)]).round(3)
        for b, c, s in zip(all_boxes.tolist(), all_cls.tolist(), scores.tolist(), strict=True):
            results.append({"image_id": image["id"], "category_id": int(c), "bbox": b, "score": s})
    return {"images": images, "annotations": annotations, "categories": categories}, results


def run_pycocotools(gt: dict[str, Any], results: list[dict[str, Any]]) -> np.ndarray:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = gt
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(results)
        ev = COCOeval(coco_gt, coco_dt, "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return np.asarray(ev.stats)


def run_ours(gt: dict[str, Any], results: list[dict[str, Any]]) -> tuple[np.ndarray, Any]:
    """What `evaluate` does with a COCO results list: validate it against the truth, then score it."""
    truth = ground_truth_from_coco(gt)
    dets = validate_coco_results(
        results, truth.image_ids.tolist(), truth.category_ids.tolist(), truth.image_sizes
    )
    stats = evaluate_coco(truth, dets)
    return np.array([stats[k] for k in STAT_NAMES]), dets


def run_faster_coco_eval(gt: dict[str, Any], results: list[dict[str, Any]]) -> np.ndarray:
    from faster_coco_eval import COCO, COCOeval_faster

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO(gt)
        coco_dt = coco_gt.loadRes(results)
        ev = COCOeval_faster(coco_gt, coco_dt, "bbox", print_function=lambda *a, **k: None)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return np.asarray(ev.stats[: len(STAT_NAMES)])


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--classes", type=int, default=80)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--border-share", type=float, default=0.2, help="detections past the border")
    parser.add_argument("--quick", action="store_true", help="500 images")
    parser.add_argument("--bootstrap", type=int, default=0, help="also time N bootstrap draws of our COCO AP")
    args = parser.parse_args()
    n_images = 500 if args.quick else args.images

    t_gen, (gt, results) = timed(
        synthetic_set, n_images, args.classes, args.seed, 7.0, 100.0, args.border_share
    )
    print(
        f"set: {n_images} images, {args.classes} classes, {len(gt['annotations'])} truth boxes, "
        f"{len(results)} detections (generated in {t_gen:.1f} s)"
    )
    # Every evaluator gets its own copy: pycocotools mutates the dicts it is given.
    t_ours, (ours, dets) = timed(run_ours, copy.deepcopy(gt), copy.deepcopy(results))
    print(
        f"detections past the border: {dets.past_border} ({dets.past_border / max(len(results), 1):.1%}), "
        f"{dets.outside} of them wholly outside; scored as given by both"
    )
    t_ref, ref = timed(run_pycocotools, copy.deepcopy(gt), copy.deepcopy(results))
    print(f"{'stat':6} {'ours':>10} {'pycocotools':>12} {'|diff|':>9}")
    for name, a, b in zip(STAT_NAMES, ours, ref, strict=True):
        print(f"{name:6} {a:10.6f} {b:12.6f} {abs(a - b):9.2g}")
    print(f"max |ours - pycocotools| over the 12 stats = {np.max(np.abs(ours - ref)):.3g}")
    print(f"ours (validate + evaluate) {t_ours:8.2f} s")
    print(f"pycocotools (loadRes + evaluate + accumulate + summarize) {t_ref:8.2f} s")
    print(f"pycocotools / ours time ratio: {t_ref / t_ours:.1f}x")
    if args.bootstrap:
        truth, boot_dets = ground_truth_from_coco(gt), detections_from_coco(results)
        t_boot, est = timed(bootstrap, evaluate_coco, truth, boot_dets, args.bootstrap, args.seed)
        ap = est["AP"]
        print(
            f"bootstrap       {t_boot:8.2f} s  for {args.bootstrap} draws: AP {ap.value:.4f} "
            + " ".join(f"{iv.level:.1%} [{iv.low:.4f}, {iv.high:.4f}]" for iv in ap.intervals)
        )
    try:
        import faster_coco_eval  # noqa: F401
    except ImportError:
        print("faster-coco-eval not installed: skipped")
        return
    t_fast, fast = timed(run_faster_coco_eval, copy.deepcopy(gt), copy.deepcopy(results))
    print(
        f"faster-coco-eval {t_fast:8.2f} s  max |faster-coco-eval - pycocotools| = {np.max(np.abs(fast - ref)):.3g}"
    )
    print(f"ours / faster-coco-eval time ratio: {t_ours / t_fast:.2f}")


if __name__ == "__main__":
    main()
