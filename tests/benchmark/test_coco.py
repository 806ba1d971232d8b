"""Our COCO bbox stats must equal pycocotools' COCOeval stats (all 12: AP and AR) on the same dicts."""

import contextlib
import copy
import io

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from benchmark.metrics.coco import STAT_NAMES, evaluate_coco, evaluate_coco_dicts, ground_truth_from_coco
from benchmark.metrics.data import Detections


def reference_stats(gt, results):
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


def ours(gt, results):
    out = evaluate_coco_dicts(copy.deepcopy(gt), copy.deepcopy(results))
    return np.array([out[k] for k in STAT_NAMES])


def generated(seed, n_images=120, n_classes=8, crowd_rate=0.08, empty_rate=0.2, score_decimals=1):
    """Truth with crowds, tiny and huge boxes, empty images; detections with ties, duplicates, wrong classes."""
    rng = np.random.default_rng(seed)
    images = [{"id": 10 + 3 * i, "width": 800, "height": 600} for i in range(n_images)]
    anns, results = [], []
    for im in images:
        n_gt = 0 if rng.random() < empty_rate else int(rng.integers(1, 9))
        for _ in range(n_gt):
            kind = rng.random()
            side = (
                rng.uniform(1, 20)
                if kind < 0.3
                else rng.uniform(20, 120)
                if kind < 0.7
                else rng.uniform(100, 600)
            )
            w, h = side * rng.uniform(0.5, 1.5), side * rng.uniform(0.5, 1.5)
            x, y = rng.uniform(0, 800 - min(w, 799)), rng.uniform(0, 600 - min(h, 599))
            cat = int(rng.integers(1, n_classes))  # the last class never has truth
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": im["id"],
                    "category_id": cat,
                    "bbox": [x, y, w, h],
                    "area": w * h * rng.uniform(0.4, 1.0),
                    "iscrowd": int(rng.random() < crowd_rate),
                }
            )
            for _ in range(int(rng.integers(0, 4))):
                j = rng.normal(0, 0.15, 4)
                results.append(
                    {
                        "image_id": im["id"],
                        "category_id": cat if rng.random() < 0.8 else int(rng.integers(1, n_classes + 1)),
                        "bbox": [
                            x + j[0] * w,
                            y + j[1] * h,
                            max(w * (1 + j[2]), 0.5),
                            max(h * (1 + j[3]), 0.5),
                        ],
                        "score": float(np.round(rng.random(), score_decimals)),
                    }
                )
        for _ in range(int(rng.integers(0, 12))):
            w, h = rng.uniform(1, 400, 2)
            results.append(
                {
                    "image_id": im["id"],
                    "category_id": int(rng.integers(1, n_classes)),  # class n_classes: only a few detections
                    "bbox": [float(rng.uniform(0, 700)), float(rng.uniform(0, 500)), float(w), float(h)],
                    "score": float(np.round(rng.random(), score_decimals)),
                }
            )
    categories = [{"id": c, "name": f"c{c}"} for c in range(1, n_classes + 1)]
    return {"images": images, "annotations": anns, "categories": categories}, results


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_coco_ap_equals_pycocotools_on_generated_sets(seed):
    gt, results = generated(seed, score_decimals=1 if seed % 2 else 3)
    assert np.max(np.abs(ours(gt, results) - reference_stats(gt, results))) == 0.0


def test_coco_ap_equals_pycocotools_with_many_crowds_and_more_than_100_detections_per_class():
    gt, results = generated(7, n_images=30, crowd_rate=0.5, empty_rate=0.0)
    rng = np.random.default_rng(7)
    image = gt["images"][0]["id"]
    # 150 detections of one class on one image: only the best 100 may count.
    for _ in range(150):
        w, h = rng.uniform(5, 300, 2)
        results.append(
            {
                "image_id": image,
                "category_id": 1,
                "bbox": [10.0, 10.0, float(w), float(h)],
                "score": float(rng.random()),
            }
        )
    assert np.max(np.abs(ours(gt, results) - reference_stats(gt, results))) == 0.0


def test_coco_ap_equals_pycocotools_when_truth_has_id_zero_and_equal_ious():
    gt = {
        "images": [{"id": 1, "width": 100, "height": 100}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": 0, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0},
            {"id": 5, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0},
            {"id": 6, "image_id": 1, "category_id": 1, "bbox": [50, 50, 40, 40], "area": 1600, "iscrowd": 0},
        ],
    }
    results = [
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
        {"image_id": 1, "category_id": 1, "bbox": [52, 50, 40, 40], "score": 0.5},
    ]
    assert np.max(np.abs(ours(gt, results) - reference_stats(gt, results))) == 0.0


def test_coco_categories_without_truth_are_left_out_and_missing_detections_score_zero():
    gt = {
        "images": [{"id": 1}, {"id": 2}],
        "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 50, 50], "area": 2500, "iscrowd": 0},
            {"id": 2, "image_id": 2, "category_id": 2, "bbox": [0, 0, 50, 50], "area": 2500, "iscrowd": 0},
        ],
    }
    results = [
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 50, 50], "score": 0.9},
        {"image_id": 2, "category_id": 3, "bbox": [0, 0, 50, 50], "score": 0.9},
    ]
    got = evaluate_coco_dicts(gt, results)
    assert got["AP"] == pytest.approx(0.5)  # class a perfect, class b missed, class c has no truth
    assert got["APs"] == -1.0  # no small truth anywhere
    assert np.max(np.abs(ours(gt, results) - reference_stats(gt, results))) == 0.0


def test_coco_accepts_arrays_as_well_as_dicts():
    gt, results = generated(11, n_images=40)
    truth = ground_truth_from_coco(gt)
    dets = Detections(
        image=[r["image_id"] for r in results],
        category=[r["category_id"] for r in results],
        boxes=[r["bbox"] for r in results],
        scores=[r["score"] for r in results],
    )
    assert evaluate_coco(truth, dets) == evaluate_coco_dicts(gt, results)


def test_coco_refuses_detections_on_unknown_images():
    gt, results = generated(3, n_images=5)
    results.append({"image_id": 999999, "category_id": 1, "bbox": [0, 0, 5, 5], "score": 0.5})
    with pytest.raises(ValueError, match="absent from the ground truth"):
        evaluate_coco_dicts(gt, results)
