"""`evaluate` (COCO) equals pycocotools on every finite box: detections past the border and with negative
coordinates are scored as pycocotools' loadRes/computeIoU score them, raw, on all 12 COCOeval stats."""

import contextlib
import copy
import io
import json

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from benchmark.metrics.coco import STAT_NAMES, evaluate_coco, ground_truth_from_coco
from benchmark.metrics.files import load_predictions

WIDTH, HEIGHT = 640, 480


def pycocotools_stats(gt, results):
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(copy.deepcopy(results))
        ev = COCOeval(coco_gt, coco_dt, "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return np.asarray(ev.stats)


def past_border_set(seed, n_images=60, n_classes=5, border_share=0.2):
    """Truth inside the image (some crowds, every size); detections near the truth, random ones, and a
    ``border_share`` of boxes pushed past an edge: negative x/y, past the right/bottom, some wholly outside."""
    rng = np.random.default_rng(seed)
    images = [{"id": 5 + 2 * i, "width": WIDTH, "height": HEIGHT} for i in range(n_images)]
    anns, results = [], []
    for im in images:
        n_gt = int(rng.integers(0, 8))
        for _ in range(n_gt):
            side = float(np.exp(rng.uniform(np.log(3), np.log(400))))
            w, h = min(side * rng.uniform(0.6, 1.6), WIDTH), min(side * rng.uniform(0.6, 1.6), HEIGHT)
            # Half the truth hugs a border, where overshooting detections change the overlap.
            x = (
                0.0
                if rng.random() < 0.25
                else WIDTH - w
                if rng.random() < 0.33
                else rng.uniform(0, WIDTH - w)
            )
            y = (
                0.0
                if rng.random() < 0.25
                else HEIGHT - h
                if rng.random() < 0.33
                else rng.uniform(0, HEIGHT - h)
            )
            cat = int(rng.integers(1, n_classes + 1))
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": im["id"],
                    "category_id": cat,
                    "bbox": [x, y, w, h],
                    "area": w * h * rng.uniform(0.5, 1.0),
                    "iscrowd": int(rng.random() < 0.05),
                }
            )
            for _ in range(int(rng.integers(0, 4))):
                j = rng.normal(0, 0.12, 4)
                results.append(
                    {
                        "image_id": im["id"],
                        "category_id": cat if rng.random() < 0.85 else int(rng.integers(1, n_classes + 1)),
                        "bbox": [x + j[0] * w, y + j[1] * h, w * (1 + abs(j[2])), h * (1 + abs(j[3]))],
                        "score": float(np.round(rng.random(), 2)),
                    }
                )
        for _ in range(int(rng.integers(0, 15))):
            w, h = np.exp(rng.uniform(np.log(2), np.log(500), 2))
            results.append(
                {
                    "image_id": im["id"],
                    "category_id": int(rng.integers(1, n_classes + 1)),
                    "bbox": [rng.uniform(0, WIDTH - 1), rng.uniform(0, HEIGHT - 1), w, h],
                    "score": float(np.round(rng.random(), 2)),
                }
            )
    for r in results:
        if rng.random() < border_share:
            x, y, w, h = r["bbox"]
            edge = rng.integers(0, 5)
            over = float(rng.uniform(0.5, 0.6 * max(w, h) + 2))
            if edge == 0:
                x = -over  # negative x
            elif edge == 1:
                y = -over  # negative y
            elif edge == 2:
                x = WIDTH - w + over  # past the right border
            elif edge == 3:
                y = HEIGHT - h + over  # past the bottom border
            else:
                x, w = -over, w + 2 * over + WIDTH * rng.uniform(0, 1)  # wider than the image
            if rng.random() < 0.05:
                x = -w - float(rng.uniform(0, 20))  # wholly outside, left of the image
            r["bbox"] = [float(x), float(y), float(w), float(h)]
        else:  # the other 80% lie inside the image
            x, y, w, h = r["bbox"]
            x1, y1 = min(max(x, 0.0), WIDTH - 1.0), min(max(y, 0.0), HEIGHT - 1.0)
            x2, y2 = max(min(x + w, WIDTH), x1 + 0.5), max(min(y + h, HEIGHT), y1 + 0.5)
            r["bbox"] = [float(x1), float(y1), float(x2 - x1), float(y2 - y1)]
    categories = [{"id": c, "name": f"c{c}"} for c in range(1, n_classes + 1)]
    return {"images": images, "annotations": anns, "categories": categories}, results


def past_border_count(results):
    return sum(
        x < 0 or y < 0 or x + w > WIDTH or y + h > HEIGHT for x, y, w, h in (r["bbox"] for r in results)
    )


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_all_12_stats_equal_pycocotools_on_detections_past_the_border(seed):
    gt, results = past_border_set(seed)
    share = past_border_count(results) / len(results)
    assert 0.15 < share < 0.3  # the set really is about 20% past the border
    truth = ground_truth_from_coco(gt)
    # Through the same reader as the `evaluate` command and the challenge endpoint.
    dets = load_predictions("coco", json.dumps(results), truth)
    assert dets.past_border == past_border_count(results) and dets.outside > 0
    ours = evaluate_coco(truth, dets)
    assert list(ours) == list(STAT_NAMES)
    reference = pycocotools_stats(gt, results)
    diff = np.abs(np.array([ours[k] for k in STAT_NAMES]) - reference)
    assert diff.max() == 0.0, dict(zip(STAT_NAMES, diff.tolist(), strict=True))


def test_a_box_wider_than_the_image_keeps_its_raw_area_and_iou():
    gt = {
        "images": [{"id": 1, "width": 100, "height": 100}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 100, 20], "area": 2000, "iscrowd": 0}
        ],
    }
    # Clipped to the image this box would equal the truth (IoU 1); raw, its IoU is 2000 / 3000 < 0.7.
    results = [{"image_id": 1, "category_id": 1, "bbox": [-25.0, 0.0, 150.0, 20.0], "score": 0.9}]
    dets = load_predictions("coco", json.dumps(results), ground_truth_from_coco(gt))
    assert dets.boxes.tolist() == [[-25.0, 0.0, 150.0, 20.0]] and dets.past_border == 1
    ours = evaluate_coco(ground_truth_from_coco(gt), dets)
    assert ours["AP50"] == pytest.approx(1.0) and ours["AP75"] == 0.0
    assert np.array([ours[k] for k in STAT_NAMES]).tolist() == pycocotools_stats(gt, results).tolist()
