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
