"""Bootstrap intervals (ILSVRC §6.2): seeded, per image, around the full-set value."""

import numpy as np
import pytest

from benchmark.metrics.bootstrap import bootstrap
from benchmark.metrics.data import Detections, GroundTruth, ImageLabels, TopKPredictions, expand_rows
from benchmark.metrics.ilsvrc import evaluate_ilsvrc_cls
from benchmark.metrics.registry import PROTOCOLS
from benchmark.metrics.voc import evaluate_voc12


def labels_case(n=200, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 10, n)
    guesses = rng.integers(0, 10, (n, 5))
    right = rng.random(n) < 0.6
    guesses[right, 0] = truth[right]
    return ImageLabels(np.arange(n), truth), TopKPredictions(np.arange(n), guesses)


def test_bootstrap_is_deterministic_for_a_seed_and_varies_with_it():
    gt, pred = labels_case()
    a = bootstrap(evaluate_ilsvrc_cls, gt, pred, n_samples=200, seed=3)
    b = bootstrap(evaluate_ilsvrc_cls, gt, pred, n_samples=200, seed=3)
    c = bootstrap(evaluate_ilsvrc_cls, gt, pred, n_samples=200, seed=4)
    assert a == b
    assert a["top1_error"].intervals != c["top1_error"].intervals


def test_bootstrap_intervals_nest_and_surround_the_full_set_value():
    gt, pred = labels_case()
    est = bootstrap(evaluate_ilsvrc_cls, gt, pred, n_samples=300, seed=0)["top1_error"]
    ci95, ci999 = est.intervals
    assert (ci95.level, ci999.level) == (0.95, 0.999)
    assert ci999.low <= ci95.low < est.value < ci95.high <= ci999.high
    # binomial standard error at n=200, p~0.4 is ~0.035: the 95% interval spans about 4 of them
    assert 0.08 < ci95.high - ci95.low < 0.2
    assert set(est.as_dict()) == {"value", "ci95", "ci99.9"}


def test_resampling_repeats_an_image_drawn_twice_as_two_images():
    rows, new_image = expand_rows(np.array([5, 7, 5, 9]), np.array([5, 5, 9]))
    assert rows.tolist() == [0, 2, 0, 2, 3]
    assert new_image.tolist() == [0, 0, 1, 1, 2]


def test_bootstrap_works_for_detection_protocols():
    gt = GroundTruth(np.arange(20), [1], np.arange(20), np.ones(20), np.tile([0, 0, 10, 10], (20, 1)))
    hits = np.arange(20) % 3 != 0
    dets = Detections(
        np.arange(20),
        np.ones(20),
        np.where(hits[:, None], [0, 0, 10, 10], [50, 50, 10, 10]),
        np.linspace(1, 0, 20),
    )
    est = bootstrap(evaluate_voc12, gt, dets, n_samples=50, seed=1)
    assert set(est) == {"mAP"}
    low, high = est["mAP"].intervals[0].low, est["mAP"].intervals[0].high
    assert low < est["mAP"].value < high


@pytest.mark.parametrize("protocol", ["coco", "voc07", "voc12", "ilsvrc-det"])
def test_detection_shortcut_gives_the_same_intervals_as_evaluating_every_draw(protocol):
    rng = np.random.default_rng(2)
    n_images, rows, dets = 25, [], []
    for image in range(n_images):
        for _ in range(int(rng.integers(0, 4))):
            x, y, w, h = *rng.uniform(0, 200, 2), *rng.uniform(5, 80, 2)
            cat = int(rng.integers(1, 4))
            rows.append((image, cat, x, y, w, h, rng.random() < 0.1))
            for _ in range(int(rng.integers(0, 3))):
                j = rng.normal(0, 0.15, 4)
                dets.append(
                    (image, cat, x + j[0] * w, y + j[1] * h, w * (1 + abs(j[2])), h, round(rng.random(), 1))
                )
        dets.append(
            (image, int(rng.integers(1, 4)), *rng.uniform(0, 200, 2), 30.0, 30.0, round(rng.random(), 1))
        )
    gt = GroundTruth(
        np.arange(n_images),
        [1, 2, 3],
        [r[0] for r in rows],
        [r[1] for r in rows],
        [r[2:6] for r in rows],
        iscrowd=[r[6] and protocol == "coco" for r in rows],
        difficult=[r[6] and protocol != "coco" for r in rows],
    )
    pred = Detections(
        [d[0] for d in dets], [d[1] for d in dets], [d[2:6] for d in dets], [d[6] for d in dets]
    )
    fn = PROTOCOLS[protocol]
    fast = bootstrap(fn, gt, pred, n_samples=15, seed=5)
    exact = bootstrap(fn, gt, pred, n_samples=15, seed=5, exact_resampling=True)
    assert fast == exact


def test_basic_intervals_reflect_the_percentile_ones_around_the_value():
    gt, pred = labels_case()
    pct = bootstrap(evaluate_ilsvrc_cls, gt, pred, n_samples=100, seed=0)["top5_error"]
    basic = bootstrap(evaluate_ilsvrc_cls, gt, pred, n_samples=100, seed=0, method="basic")["top5_error"]
    for p, b in zip(pct.intervals, basic.intervals, strict=True):
        assert b.low == pytest.approx(2 * pct.value - p.high)
        assert b.high == pytest.approx(2 * pct.value - p.low)
