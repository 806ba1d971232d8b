import math

import numpy as np
import pytest

from annotation.geometry import iou_matrix, validate_extreme_points
from simulator.simulated import (
    EXTREME_CLICK_MEAN_SECONDS,
    SU_2012_TIMINGS,
    TIMINGS,
    Crowd,
    CrowdSpec,
    SimulatedWorker,
    TaskKind,
    Timing,
    WorkerKind,
    WorkerProfile,
    answer_binary,
    answer_seconds,
    box_is_good,
    draw_box,
    extreme_points,
    judge_box_quality,
    judge_coverage,
)

IMAGE = (640, 480)
BIG = (100.0, 80.0, 300.0, 230.0)


def worker(kind=WorkerKind.HONEST, seed=0, **kw):
    fields = {"worker_id": "w", "kind": kind, "accuracy": 0.9} | kw
    return SimulatedWorker(WorkerProfile(**fields), seed)


@pytest.mark.parametrize("accuracy", [0.65, 0.88, 0.97])
def test_measured_accuracy_over_10000_answers_is_within_1pp_of_the_parameter(accuracy):
    w = worker(accuracy=accuracy, seed=int(accuracy * 100))
    truths = w.rng.random(10_000) < 0.6
    correct = sum(answer_binary(w, bool(t)) == bool(t) for t in truths)
    assert abs(correct / 10_000 - accuracy) < 0.01


def test_difficulty_multiplies_the_error_rate_up_to_a_coin_flip():
    w = worker(accuracy=0.9, seed=1)
    wrong = sum(not answer_binary(w, True, difficulty=2.0) for _ in range(10_000))
    assert abs(wrong / 10_000 - 0.2) < 0.01
    wrong = sum(not answer_binary(w, True, difficulty=50.0) for _ in range(10_000))
    assert abs(wrong / 10_000 - 0.5) < 0.015


def test_yes_spammer_always_answers_yes():
    w = worker(WorkerKind.YES_SPAMMER)
    assert all(answer_binary(w, t) for t in [True, False] * 500)
    assert judge_coverage(w, [BIG, (400, 300, 500, 400)], [BIG])
    assert judge_box_quality(w, (0, 0, 20, 20), [BIG])


def test_random_spammer_answers_yes_half_the_time_whatever_the_truth():
    w = worker(WorkerKind.RANDOM_SPAMMER, seed=3)
    yes_when_true = np.mean([answer_binary(w, True) for _ in range(5000)])
    yes_when_false = np.mean([answer_binary(w, False) for _ in range(5000)])
    assert abs(yes_when_true - 0.5) < 0.025
    assert abs(yes_when_false - 0.5) < 0.025


def test_spammers_draw_boxes_unrelated_to_the_objects():
    w = worker(WorkerKind.RANDOM_SPAMMER, seed=4)
    boxes = [draw_box(w, [BIG], [], IMAGE) for _ in range(500)]
    ious = iou_matrix(boxes, [BIG])[:, 0]
    assert (ious >= 0.7).mean() < 0.05


def test_same_seed_gives_the_same_answers():
    a, b = worker(seed=7), worker(seed=7)
    assert [answer_binary(a, True) for _ in range(200)] == [answer_binary(b, True) for _ in range(200)]
    assert draw_box(a, [BIG], [], IMAGE) == draw_box(b, [BIG], [], IMAGE)


def test_drawing_jitter_has_the_profile_spread_and_no_bias():
    w = worker(seed=5, jitter_px=2.0, loose_box_rate=0.0)
    boxes = np.array([draw_box(w, [BIG], [], IMAGE) for _ in range(4000)])
    err = boxes - np.array(BIG)
    assert np.all(np.abs(err.mean(axis=0)) < 0.15)
    assert np.all(np.abs(err.std(axis=0) - 2.0) < 0.15)
    assert iou_matrix(boxes, [BIG]).min() > 0.85


def test_jitter_shrinks_on_small_objects_so_they_stay_tight():
    w = worker(seed=6, jitter_px=4.0, loose_box_rate=0.0, small_miss_rate=0.0)
    tiny = (50.0, 50.0, 66.0, 62.0)
    boxes = [draw_box(w, [tiny], [], IMAGE) for _ in range(1000)]
    assert (iou_matrix(boxes, [tiny])[:, 0] >= 0.7).mean() > 0.97


def test_loose_boxes_appear_at_the_profile_rate_and_fail_the_07_iou():
    w = worker(seed=8, jitter_px=2.0, loose_box_rate=0.05)
    boxes = [draw_box(w, [BIG], [], IMAGE) for _ in range(5000)]
    loose = (iou_matrix(boxes, [BIG])[:, 0] < 0.7).mean()
    assert abs(loose - 0.05) < 0.01


def test_sloppy_drawers_rebox_already_boxed_instances_at_their_rate():
    w = worker(WorkerKind.SLOPPY, seed=9, rebox_rate=0.3, loose_box_rate=0.0)
    other = (400.0, 300.0, 500.0, 420.0)
    boxes = [draw_box(w, [other], [BIG], IMAGE) for _ in range(4000)]
    on_existing = (iou_matrix(boxes, [BIG])[:, 0] > 0.7).mean()
    assert abs(on_existing - 0.3) < 0.025
    # A re-drawn box is hand-made, never a pixel copy (the draw page refuses exact duplicates).
    assert BIG not in boxes


def test_small_objects_are_missed_at_the_profile_rate():
    w = worker(seed=10, small_miss_rate=0.4)
    tiny = (10.0, 10.0, 30.0, 28.0)
    results = [draw_box(w, [tiny], [], IMAGE) for _ in range(5000)]
    missed = np.mean([r is None for r in results])
    assert abs(missed - 0.4) < 0.02
    assert all(draw_box(w, [BIG], [], IMAGE) is not None for _ in range(200))


def test_drawer_prefers_large_instances_but_boxes_all_kinds():
    w = worker(seed=11, loose_box_rate=0.0, small_miss_rate=0.0)
    small = (500.0, 400.0, 530.0, 430.0)
    boxes = [draw_box(w, [BIG, small], [], IMAGE) for _ in range(2000)]
    on_big = (iou_matrix(boxes, [BIG])[:, 0] > 0.7).mean()
    on_small = (iou_matrix(boxes, [small])[:, 0] > 0.7).mean()
    assert on_big > on_small > 0.1
    assert on_big + on_small > 0.99


def test_boxes_stay_inside_the_image_at_its_edges():
    w = worker(seed=12, jitter_px=6.0, loose_box_rate=0.5)
    edge = (0.0, 0.0, 640.0, 100.0)
    for _ in range(500):
        x1, y1, x2, y2 = draw_box(w, [edge], [], IMAGE)
        assert 0 <= x1 < x2 <= 640 and 0 <= y1 < y2 <= 480


def test_nothing_left_to_box_gives_no_box():
    assert draw_box(worker(), [], [BIG], IMAGE) is None


def test_box_quality_truth_demands_tightness_and_no_duplicate():
    other = (400.0, 300.0, 500.0, 420.0)
    assert box_is_good((101, 81, 299, 231), [BIG, other])
    assert not box_is_good((80, 60, 330, 260), [BIG, other])  # loose
    assert not box_is_good((101, 81, 299, 231), [BIG, other], accepted_boxes=[BIG])  # duplicate
    assert box_is_good((401, 301, 499, 419), [BIG, other], accepted_boxes=[BIG])


def test_quality_judges_answer_with_their_accuracy_and_struggle_near_the_threshold():
    w = worker(accuracy=0.9, seed=13)
    clear = np.mean([judge_box_quality(w, (101, 81, 299, 231), [BIG]) for _ in range(3000)])
    assert abs(clear - 0.9) < 0.015
    borderline = (100.0, 80.0, 300.0, 230.0 + 150.0 * 0.35)  # IoU about 0.74
    said_yes = np.mean([judge_box_quality(w, borderline, [BIG]) for _ in range(3000)])
    assert abs(said_yes - 0.8) < 0.02


def test_coverage_judges_overlook_missing_small_instances_but_not_large_ones():
    w = worker(accuracy=1.0, seed=14, small_miss_rate=0.3)
    tiny = (10.0, 10.0, 25.0, 25.0)
    assert judge_coverage(w, [BIG], [BIG])
    assert not any(judge_coverage(w, [BIG, (400, 300, 500, 420)], [BIG]) for _ in range(200))
    said_covered = np.mean([judge_coverage(w, [BIG, tiny], [BIG]) for _ in range(3000)])
    assert abs(said_covered - 0.3) < 0.025


def test_lognormal_fit_reproduces_published_median_and_mean():
    for timing in SU_2012_TIMINGS.values():
        assert math.exp(timing.mu) == pytest.approx(timing.median)
        assert math.exp(timing.mu + timing.sigma**2 / 2) == pytest.approx(timing.mean)
    assert Timing(25.5, 50.8).sigma == pytest.approx(1.1737, abs=1e-3)


@pytest.mark.parametrize("task", [TaskKind.DRAW, TaskKind.QUALITY, TaskKind.COVERAGE])
def test_answer_time_median_of_one_average_worker_matches_su_2012(task):
    w = worker(seed=15)
    times = np.array([answer_seconds(w, task) for _ in range(20_000)])
    assert np.median(times) == pytest.approx(SU_2012_TIMINGS[task].median, rel=0.03)


def test_crowd_wide_answer_times_match_su_2012_median_and_mean():
    crowd = Crowd.build(CrowdSpec(n_workers=400, seed=1, spammer_fraction=0, lazy_fraction=0))
    times = np.array([answer_seconds(w, TaskKind.DRAW) for w in crowd for _ in range(100)])
    assert np.median(times) == pytest.approx(25.5, rel=0.06)
    assert times.mean() == pytest.approx(50.8, rel=0.1)


def test_crowd_wide_extreme_click_times_keep_the_2017_papers_mean_per_box():
    crowd = Crowd.build(CrowdSpec(n_workers=400, seed=1, spammer_fraction=0, lazy_fraction=0))
    times = np.array([answer_seconds(w, TaskKind.EXTREME_CLICK) for w in crowd for _ in range(100)])
    assert times.mean() == pytest.approx(EXTREME_CLICK_MEAN_SECONDS, rel=0.1)
    assert TIMINGS[TaskKind.EXTREME_CLICK].mean == 7.2


def test_extreme_points_lie_on_the_boxs_sides_so_the_box_is_their_bounds_and_take_no_worker_draws():
    w = worker(seed=3)
    before = w.rng.bit_generator.state
    box = (12.5, 40.0, 300.25, 222.0)
    points = extreme_points(box)
    assert w.rng.bit_generator.state == before  # a clicking run draws the boxes a dragging run draws
    assert points == extreme_points(box)
    assert points["top"][1] == 40.0 and points["bottom"][1] == 222.0
    assert points["left"][0] == 12.5 and points["right"][0] == 300.25
    assert validate_extreme_points(points, width=320, height=240).bounds() == box


def test_crowd_has_the_requested_spammer_split_shuffled_among_workers():
    crowd = Crowd.build(CrowdSpec(n_workers=40, seed=2, spammer_fraction=0.1))
    kinds = [w.profile.kind for w in crowd]
    assert kinds.count(WorkerKind.YES_SPAMMER) == 2
    assert kinds.count(WorkerKind.RANDOM_SPAMMER) == 2
    assert kinds.count(WorkerKind.SLOPPY) == 4
    assert kinds[:4] != [WorkerKind.YES_SPAMMER] * 2 + [WorkerKind.RANDOM_SPAMMER] * 2
    assert len({w.worker_id for w in crowd}) == 40
    spammer = next(w for w in crowd if w.profile.is_spammer)
    honest = [w for w in crowd if w.profile.kind is WorkerKind.HONEST]
    assert spammer.profile.speed < np.median([w.profile.speed for w in honest])


def test_crowd_accuracy_spread_is_centred_near_088_with_a_weak_tail():
    crowd = Crowd.build(CrowdSpec(n_workers=2000, seed=3, spammer_fraction=0))
    acc = np.array([w.profile.accuracy for w in crowd])
    assert 0.85 < np.median(acc) < 0.91
    assert 0.05 < (acc < 0.76).mean() < 0.2
    assert acc.min() >= 0.55 and acc.max() <= 0.995


def test_same_crowd_seed_gives_the_same_crowd_and_answers():
    a = Crowd.build(CrowdSpec(n_workers=10, seed=4), class_keys=["cat", "dog"])
    b = Crowd.build(CrowdSpec(n_workers=10, seed=4), class_keys=["cat", "dog"])
    assert [w.profile for w in a] == [w.profile for w in b]
    assert [answer_binary(w, True) for w in a for _ in range(20)] == [
        answer_binary(w, True) for w in b for _ in range(20)
    ]


def test_confusable_classes_raise_the_false_positive_difficulty():
    crowd = Crowd.build(
        CrowdSpec(n_workers=3, seed=5), class_keys=["cat", "lynx", "car"], confusable_pairs=[("cat", "lynx")]
    )
    w = crowd.workers[0]
    base = crowd.difficulty(w, "cat", ["car"])
    assert crowd.difficulty(w, "cat", ["lynx"]) == pytest.approx(3.0 * base)
    assert crowd.difficulty(w, "cat", ["cat", "lynx"]) == pytest.approx(base)
    assert crowd.difficulty(w, "an internal node", ["lynx"]) == 1.0


def test_class_difficulty_varies_between_classes():
    crowd = Crowd.build(CrowdSpec(n_workers=2, seed=6), class_keys=[f"c{i}" for i in range(50)])
    values = np.array(list(crowd.class_difficulty.values()))
    assert values.std() > 0.2
    assert 0.7 < np.median(values) < 1.4


def test_colluders_answer_each_question_identically_and_mostly_at_random():
    crowd = Crowd.build(CrowdSpec(n_workers=50, seed=7, spammer_fraction=0, colluder_fraction=0.1))
    group = [w for w in crowd if w.profile.kind is WorkerKind.COLLUDER]
    assert len(group) == 5 and all(w.profile.is_spammer for w in group)
    truths = [bool(t) for t in np.random.default_rng(0).integers(0, 2, size=400)]
    answers = np.array(
        [[answer_binary(w, t, question_key=(i, "cat")) for i, t in enumerate(truths)] for w in group]
    )
    assert (answers == answers[0]).all()  # every member copies the same answer
    right = (answers[0] == np.array(truths)).mean()
    assert 0.4 < right < 0.6  # a coin, not a worker who tries


def test_colluders_differ_between_questions_and_between_groups():
    a = Crowd.build(CrowdSpec(n_workers=20, seed=8, spammer_fraction=0, colluder_fraction=0.2))
    b = Crowd.build(CrowdSpec(n_workers=20, seed=9, spammer_fraction=0, colluder_fraction=0.2))
    wa = next(w for w in a if w.profile.kind is WorkerKind.COLLUDER)
    wb = next(w for w in b if w.profile.kind is WorkerKind.COLLUDER)
    ours = [answer_binary(wa, True, question_key=i) for i in range(200)]
    theirs = [answer_binary(wb, True, question_key=i) for i in range(200)]
    assert 0.3 < np.mean(ours) < 0.9 and ours != theirs


def test_colluder_fraction_is_validated_and_zero_by_default():
    assert not any(w.profile.kind is WorkerKind.COLLUDER for w in Crowd.build(CrowdSpec(n_workers=50)))
    with pytest.raises(ValueError):
        CrowdSpec(spammer_fraction=0.5, colluder_fraction=0.4, sloppy_fraction=0.2)
