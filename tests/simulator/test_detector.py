"""The simulated detector (pure): on a seeded run its recall at IoU 0.7 and its background false positives per
image come out as specified, scores separate hits from the rest as the calibration knob says, and the same
spec and scene always give the same proposals."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.geometry import iou_matrix
from simulator.detector import (
    BACKGROUND_IOU,
    HIT_IOU,
    DetectorSpec,
    ProposalKind,
    coco_results,
    detect,
    detect_all,
    recall_at,
)
from simulator.ground_truth import as_boxes
from simulator.scenes import SceneSpec, generate_scenes

CLASSES = [f"c{i:02d}" for i in range(12)]


@pytest.fixture(scope="module")
def scenes():
    return generate_scenes(CLASSES, SceneSpec(n_images=120, seed=3))


@pytest.fixture(scope="module")
def truth(scenes):
    return {(s.index, k): b for s in scenes for k, b in s.boxes_by_class().items()}


@pytest.mark.parametrize("recall", [0.3, 0.6, 0.9])
def test_recall_at_iou_07_is_what_the_spec_says(scenes, truth, recall):
    measured = recall_at(truth, detect_all(scenes, DetectorSpec(recall=recall, seed=1)))
    n = sum(len(b) for b in truth.values())
    # Each instance is found independently: allow four binomial standard deviations.
    assert abs(measured - recall) <= 4 * np.sqrt(recall * (1 - recall) / n), (measured, n)


@pytest.mark.parametrize("rate", [0.0, 0.5, 2.0])
def test_background_false_positives_per_image_are_what_the_spec_says(scenes, truth, rate):
    found = detect_all(scenes, DetectorSpec(false_positives_per_image=rate, seed=2))
    background = [p for ps in found.values() for p in ps if p.kind == ProposalKind.BACKGROUND]
    per_image = len(background) / len(scenes)
    assert abs(per_image - rate) <= 4 * np.sqrt(max(rate, 0.01) / len(scenes)) + 0.05, per_image
    for p in background:  # a background box overlaps no instance of its class
        assert iou_matrix(as_boxes([p.box]), truth[(p.image_index, p.class_key)]).max() < BACKGROUND_IOU


def test_a_perfect_detector_places_every_hit_at_iou_07_and_nothing_else(scenes, truth):
    spec = DetectorSpec(recall=1.0, false_positives_per_image=0.0, localisation_noise=0.1, seed=4)
    found = detect_all(scenes, spec)
    assert recall_at(truth, found) == 1.0
    for key, ps in found.items():
        assert all(p.kind == ProposalKind.HIT for p in ps)
        assert len(ps) == len(truth[key])
        ious = iou_matrix(as_boxes([p.box for p in ps]), truth[key])
        assert (ious.max(axis=1) >= HIT_IOU).all()


def test_precision_falls_with_misses_mislocalised_and_background(scenes, truth):
    spec = DetectorSpec(recall=0.6, false_positives_per_image=1.0, mislocalised_rate=1.0, seed=5)
    found = [p for ps in detect_all(scenes, spec).values() for p in ps]
    hits = sum(p.kind == ProposalKind.HIT for p in found)
    n = sum(len(b) for b in truth.values())
    # About 0.6 n hits among 0.6 n hits + 0.4 n mislocalised + 1 background per image.
    expected = 0.6 * n / (n + len(scenes))
    assert abs(hits / len(found) - expected) < 0.06


def test_score_separation_is_the_calibration_knob(scenes):
    def mean_scores(separation):
        found = [p for s in scenes for p in detect(s, DetectorSpec(score_separation=separation, seed=6))]
        hit = np.mean([p.score for p in found if p.kind == ProposalKind.HIT])
        rest = np.mean([p.score for p in found if p.kind != ProposalKind.HIT])
        return hit, rest

    hit, rest = mean_scores(0.0)
    assert abs(hit - rest) < 0.05, "no separation: the score says nothing"
    hit, rest = mean_scores(4.0)
    assert hit > 0.8 and rest < 0.2


def test_the_same_seed_gives_the_same_proposals_in_any_order(scenes):
    spec = DetectorSpec(seed=7)
    forward = [detect(s, spec) for s in scenes[:10]]
    backward = [detect(s, spec) for s in reversed(scenes[:10])][::-1]
    assert forward == backward
    assert detect(scenes[0], spec) != detect(scenes[0], DetectorSpec(seed=8))


def test_proposals_lie_inside_their_image_and_convert_to_coco_rows(scenes):
    found = detect(scenes[0], DetectorSpec(false_positives_per_image=3.0, seed=9))
    for p in found:
        x1, y1, x2, y2 = p.box
        assert 0 <= x1 < x2 <= scenes[0].width and 0 <= y1 < y2 <= scenes[0].height
        assert 0.0 <= p.score <= 1.0
    rows = coco_results(found, {scenes[0].index: 17}, {k: i for i, k in enumerate(CLASSES)})
    assert rows[0]["image_id"] == 17 and rows[0]["bbox"][2] == pytest.approx(
        found[0].box[2] - found[0].box[0]
    )


def test_a_bad_spec_is_refused():
    with pytest.raises(ValueError):
        DetectorSpec(recall=1.5)
    with pytest.raises(ValueError):
        DetectorSpec(false_positives_per_image=-1)
