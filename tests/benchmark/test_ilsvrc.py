"""ILSVRC classification, localization and detection metrics (Russakovsky et al. §4)."""

import numpy as np
import pytest

from benchmark.metrics.data import Detections, GroundTruth, ImageLabels, TopKPredictions
from benchmark.metrics.ilsvrc import (
    detection_threshold,
    evaluate_ilsvrc_cls,
    evaluate_ilsvrc_det,
    evaluate_ilsvrc_loc,
)


def one_object(box, pixel_inclusive=False):
    return GroundTruth(
        [1], [3], [1], [3], [box], category_names={3: "n01440764"}, pixel_inclusive=pixel_inclusive
    )


def test_small_object_threshold_worked_example_counts_a_20px_box_around_a_10px_object():
    gt = one_object([100, 100, 10, 10])
    assert detection_threshold(gt.boxes)[0] == pytest.approx(0.25)
    hit = Detections([1], [3], [[95, 95, 20, 20]], [0.9])  # IoU = 100 / 400 = 0.25
    assert evaluate_ilsvrc_det(gt, hit)["mAP"] == 1.0
    loose = Detections([1], [3], [[95, 95, 21, 21]], [0.9])  # IoU = 100 / 441 < 0.25
    assert evaluate_ilsvrc_det(gt, loose)["mAP"] == 0.0


def test_large_objects_keep_the_half_overlap_threshold():
    gt = one_object([0, 0, 200, 100])
    assert detection_threshold(gt.boxes)[0] == 0.5
    half = Detections([1], [3], [[0, 0, 200, 50]], [0.9])  # IoU exactly 0.5 counts (devkit's >=)
    assert evaluate_ilsvrc_det(gt, half)["mAP"] == 1.0
    less = Detections([1], [3], [[0, 0, 200, 49]], [0.9])
    assert evaluate_ilsvrc_det(gt, less)["mAP"] == 0.0


def test_detection_greedy_matching_goes_by_confidence_and_duplicates_are_false_positives():
    gt = GroundTruth([1, 2], [3], [1, 2], [3, 3], [[0, 0, 100, 100], [0, 0, 100, 100]])
    dets = Detections(
        [1, 1, 2], [3, 3, 3], [[0, 0, 100, 100], [0, 0, 99, 99], [0, 0, 100, 100]], [0.5, 0.9, 0.1]
    )
    # order: img1 0.9 (TP), img1 0.5 (duplicate -> FP), img2 0.1 (TP): AP = 0.5 * 1 + 0.5 * 2/3
    assert evaluate_ilsvrc_det(gt, dets)["mAP"] == pytest.approx(0.5 + 0.5 * 2 / 3)


def test_detection_takes_the_free_truth_when_the_best_one_is_taken():
    gt = GroundTruth([1], [3], [1, 1], [3, 3], [[0, 0, 100, 100], [10, 0, 100, 100]])
    dets = Detections([1, 1], [3, 3], [[0, 0, 100, 100], [0, 0, 100, 100]], [0.9, 0.8])
    # the second detection falls back to the other object (IoU 0.82): Algorithm 2, unlike VOC
    assert evaluate_ilsvrc_det(gt, dets)["mAP"] == 1.0


def test_blacklisted_image_class_pairs_are_ignored():
    gt = GroundTruth([1, 2], [3], [1], [3], [[0, 0, 50, 50]], blacklist=frozenset({(2, 3)}))
    dets = Detections([2, 1], [3, 3], [[0, 0, 50, 50], [0, 0, 50, 50]], [0.9, 0.8])
    assert evaluate_ilsvrc_det(gt, dets)["mAP"] == 1.0


def test_top5_error_counts_an_image_right_when_any_guess_is_its_class():
    gt = ImageLabels([1, 2, 3, 4], [7, 8, 9, 10])
    pred = TopKPredictions(
        [1, 2, 3],  # image 4 has no line: an error
        [[7, 1, 2, 3, 4], [1, 2, 3, 4, 8], [1, 2, 3, 4, 5]],
    )
    assert evaluate_ilsvrc_cls(gt, pred) == {"top1_error": 0.75, "top5_error": 0.5}


def test_localization_needs_the_right_class_and_an_overlapping_box():
    gt = ImageLabels(
        [1, 2, 3],
        [7, 8, 9],
        box_image=[1, 1, 2, 3],
        boxes=[[0, 0, 10, 10], [50, 50, 40, 40], [0, 0, 20, 20], [0, 0, 20, 20]],
    )
    boxes = np.zeros((3, 5, 4))
    boxes[0, 1] = [50, 50, 40, 40]  # second guess right class, matches the second instance
    boxes[1, 0] = [0, 0, 20, 20]  # right box, wrong class
    boxes[2, 0] = [0, 0, 20, 9]  # right class, IoU 0.45
    pred = TopKPredictions([1, 2, 3], [[1, 7, 2, 3, 4], [1, 2, 3, 4, 5], [9, 1, 2, 3, 4]], boxes)
    assert evaluate_ilsvrc_loc(gt, pred) == {"top1_error": 1.0, "top5_error": pytest.approx(2 / 3)}


def ilsvrc_devkit_reference(gt_by_image, rows):
    """The ILSVRC devkit's detection evaluation for one class, transcribed: results grouped by image (a stable
    sort by image id), each image's sorted by decreasing confidence (stable); each detection takes, among the
    truths not yet detected, the one with ``ov >= thr(k) && ov > ovmax`` (+1 pixel rule, thr(k) =
    min(0.5, wh / ((w + 10)(h + 10))) with w = x2 - x1 + 1); then pooled in image-list order, sorted by
    decreasing confidence (stable) and scored with VOCap. ``rows``: (image, score, x1, y1, x2, y2)."""
    tp_all, fp_all, conf_all = [], [], []
    for image in sorted(gt_by_image):
        objs = gt_by_image[image]
        thr = []
        for gx1, gy1, gx2, gy2 in objs:
            w, h = gx2 - gx1 + 1, gy2 - gy1 + 1
            thr.append(min(0.5, (w * h) / ((w + 10) * (h + 10))))
        mine = [r for r in rows if r[0] == image]
        mine = sorted(mine, key=lambda r: -r[1])  # stable
        detected = [False] * len(objs)
        for _, conf, *bb in mine:
            ovmax, kmax = -1.0, -1
            for k, bbgt in enumerate(objs):
                if detected[k]:
                    continue
                iw = min(bb[2], bbgt[2]) - max(bb[0], bbgt[0]) + 1
                ih = min(bb[3], bbgt[3]) - max(bb[1], bbgt[1]) + 1
                if iw > 0 and ih > 0:
                    ua = (
                        (bb[2] - bb[0] + 1) * (bb[3] - bb[1] + 1)
                        + (bbgt[2] - bbgt[0] + 1) * (bbgt[3] - bbgt[1] + 1)
                        - iw * ih
                    )
                    ov = iw * ih / ua
                    if ov >= thr[k] and ov > ovmax:
                        ovmax, kmax = ov, k
            if kmax >= 0:
                detected[kmax] = True
            tp_all.append(int(kmax >= 0))
            fp_all.append(int(kmax < 0))
            conf_all.append(conf)
    order = sorted(range(len(conf_all)), key=lambda k: -conf_all[k])  # stable
    tp = np.cumsum(np.array(tp_all)[order]) if order else np.zeros(0)
    fp = np.cumsum(np.array(fp_all)[order]) if order else np.zeros(0)
    npos = sum(len(objs) for objs in gt_by_image.values())
    rec, prec = tp / npos, tp / (tp + fp)
    mrec, mpre = np.r_[0, rec, 1], np.r_[0, prec, 0]
    for i in range(len(mpre) - 2, -1, -1):
        mpre[i] = max(mpre[i], mpre[i + 1])
    i = np.flatnonzero(mrec[1:] != mrec[:-1]) + 1
    return float(np.sum((mrec[i] - mrec[i - 1]) * mpre[i]))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_ilsvrc_det_equals_the_devkit_on_raw_boxes_past_the_border_and_small_objects(seed):
    """Small objects near the border (threshold below 0.5), float detections about 20% past the border or at
    negative coordinates, tied scores in shuffled file order: read as `evaluate` reads ILSVRC text."""
    from benchmark.metrics.files import load_predictions
    from benchmark.metrics.voc_xml import read_voc_xml

    width, height = 100, 80
    rng = np.random.default_rng(seed)
    gt_by_image, rows = {}, []
    for image in range(1, 26):
        objs = []
        for _ in range(int(rng.integers(0, 5))):
            w, h = int(rng.integers(1, 14 if rng.random() < 0.6 else 60)), int(rng.integers(1, 14))
            x1 = 0 if rng.random() < 0.3 else int(rng.integers(0, width - w))
            y1 = 0 if rng.random() < 0.3 else int(rng.integers(0, height - h))
            objs.append((x1, y1, x1 + w, y1 + h))
        gt_by_image[image] = objs
        for x1, y1, x2, y2 in objs:
            for _ in range(int(rng.integers(0, 4))):
                j = rng.normal(0, 2.5, 4)
                rows.append([image, x1 + j[0], y1 + j[1], x2 + j[2], y2 + j[3]])
        for _ in range(int(rng.integers(0, 3))):
            x1, y1 = rng.uniform(0, width - 3), rng.uniform(0, height - 3)
            rows.append([image, x1, y1, x1 + rng.uniform(1, 30), y1 + rng.uniform(1, 30)])
    dets = []
    for image, x1, y1, x2, y2 in rows:
        x1, x2, y1, y2 = min(x1, x2), max(x1, x2), min(y1, y2), max(y1, y2)
        if rng.random() < 0.2:  # pushed past the left/top edge (negative) or the right edge
            shift = rng.uniform(1, 12)
            x1, x2 = (-shift, x2 - x1 - shift) if rng.random() < 0.5 else (x1, width - 1 + shift)
            y1 = -rng.uniform(0, 5) if rng.random() < 0.5 else y1
        else:
            x1, y1 = min(max(x1, 0), width - 2), min(max(y1, 0), height - 2)
            x2, y2 = min(max(x2, x1 + 1), width - 1), min(max(y2, y1 + 1), height - 1)
        dets.append(
            (image, float(rng.integers(0, 6)) / 5, round(x1, 2), round(y1, 2), round(x2, 2), round(y2, 2))
        )
    dets = [dets[k] for k in rng.permutation(len(dets))]  # file order is not image order
    xml = [
        (
            image,
            f"<annotation><size><width>{width}</width><height>{height}</height></size>"
            + "".join(
                f"<object><name>n01</name><bndbox><xmin>{a}</xmin><ymin>{b}</ymin><xmax>{c}</xmax>"
                f"<ymax>{d}</ymax></bndbox></object>"
                for a, b, c, d in objs
            )
            + "</annotation>",
        )
        for image, objs in gt_by_image.items()
    ]
    gt = read_voc_xml(xml, ["n01"])
    text = "".join(f"{i} 1 {s} {x1} {y1} {x2} {y2}\n" for i, s, x1, y1, x2, y2 in dets)
    pred = load_predictions("ilsvrc-det", text, gt)
    assert pred.past_border > 0.1 * len(dets) and np.any(pred.boxes[:, 0] < 0)
    assert evaluate_ilsvrc_det(gt, pred)["mAP"] == pytest.approx(
        ilsvrc_devkit_reference(gt_by_image, dets), abs=1e-12
    )
