import numpy as np
import pytest

from annotation.geometry import iou_matrix
from simulator.ground_truth import (
    all_instances_covered,
    box_accuracy,
    box_coverage,
    box_scores,
    label_precision_recall,
    match_boxes,
)

A = (0.0, 0.0, 10.0, 10.0)
B = (50.0, 50.0, 70.0, 90.0)


def test_iou_of_hand_computed_pairs():
    iou = iou_matrix([A, (5, 0, 15, 10), (20, 20, 30, 30)], [A])
    assert iou[:, 0] == pytest.approx([1.0, 50 / 150, 0.0])
    assert iou_matrix([], [A]).shape == (0, 1)
    assert iou_matrix([(3, 3, 3, 9)], [(3, 3, 3, 9)])[0, 0] == 0.0  # degenerate boxes never match


def test_precision_and_recall_of_image_labels():
    truth = {("i1", "cat"), ("i1", "dog"), ("i2", "car"), ("i3", "cat")}
    predicted = {("i1", "cat"), ("i2", "car"), ("i2", "bus")}
    score = label_precision_recall(predicted, truth)
    assert score.precision == pytest.approx(2 / 3)
    assert score.recall == pytest.approx(2 / 4)
    assert (score.true_positives, score.false_positives, score.false_negatives) == (2, 1, 2)


def test_precision_is_none_without_predictions():
    score = label_precision_recall([], [("i1", "cat")])
    assert score.precision is None and score.recall == 0.0


def test_matching_is_one_to_one_so_one_box_cannot_cover_two_instances():
    twins = [(0, 0, 10, 10), (1, 0, 11, 10)]
    assert match_boxes(twins, [(0, 0, 10.5, 10)]).tolist() == [0]
    assert not all_instances_covered(twins, [(0, 0, 10.5, 10)])
    assert all_instances_covered(twins, [(1, 0, 11, 10), (0, 0, 10, 10)])


def test_coverage_counts_images_whose_every_instance_of_every_class_is_boxed():
    truth = {
        ("i1", "cat"): [A, B],
        ("i1", "dog"): [(100, 100, 150, 150)],
        ("i2", "cat"): [A],
        ("i3", "car"): np.zeros((0, 4)),
    }
    accepted = {
        ("i1", "cat"): [A, B],
        ("i1", "dog"): [],  # the dog is missed: i1 is not covered
        ("i2", "cat"): [(0, 0, 10, 12)],  # IoU 0.83
    }
    score = box_scores(truth, accepted)
    assert (score.images, score.covered_images) == (2, 1)
    assert score.coverage == 0.5
    assert box_coverage(truth, accepted) == 0.5


def test_coverage_threshold_is_05_iou():
    truth = {("i1", "cat"): [A]}
    assert box_coverage(truth, {("i1", "cat"): [(0, 0, 10, 19)]}) == 1.0  # IoU 0.526
    assert box_coverage(truth, {("i1", "cat"): [(0, 0, 10, 21)]}) == 0.0  # IoU 0.476


def test_accuracy_is_the_share_of_accepted_boxes_tight_to_a_true_box_of_their_class():
    truth = {("i1", "cat"): [A, B], ("i1", "dog"): [(100, 100, 150, 150)]}
    accepted = {
        ("i1", "cat"): [A, (50, 50, 70, 100)],  # second: IoU 0.8
        ("i1", "dog"): [A],  # a cat's box filed as dog is wrong
        ("i2", "cat"): [A],  # an image without cats
    }
    assert box_accuracy(truth, accepted) == pytest.approx(2 / 4)
    assert box_accuracy(truth, accepted, iou_threshold=0.85) == pytest.approx(1 / 4)


def test_duplicates_are_accurate_but_counted_apart():
    truth = {("i1", "cat"): [A]}
    score = box_scores(truth, {("i1", "cat"): [A, (0.5, 0, 10, 10)]})
    assert score.accuracy == 1.0
    assert score.duplicate_boxes == 1


def test_empty_inputs_give_none_not_a_number():
    score = box_scores({}, {})
    assert score.coverage is None and score.accuracy is None
