"""The named crowds of `simulate --crowd`: the hostile crowd has the make-up issue 13 asks for and is hostile
in every task kind; the clean crowd is honest; the command-line shares still override."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from annotation.geometry import iou_matrix
from simulator.simulated import (
    Crowd,
    WorkerKind,
    answer_binary,
    confusable_pairs,
    crowd_spec,
    draw_box,
    judge_box_quality,
    judge_coverage,
)

IMAGE = (640, 480)
BIG = np.array([[100.0, 80.0, 300.0, 230.0]])
SMALL = np.array([[400.0, 300.0, 420.0, 318.0]])  # 20 x 18 px: a small object


def hostile(n=100, seed=0):
    return Crowd.build(crowd_spec("hostile", n_workers=n, seed=seed))


def of_kind(crowd, kind):
    return [w for w in crowd if w.profile.kind is kind]


def test_hostile_crowd_has_the_issue_13_shares_of_each_kind():
    counts = Counter(w.profile.kind for w in hostile(100))
    assert counts[WorkerKind.RANDOM_SPAMMER] == 15
    assert counts[WorkerKind.YES_SPAMMER] == 5
    assert counts[WorkerKind.COLLUDER] == 2
    assert counts[WorkerKind.WEAK] == 10
    assert counts[WorkerKind.SLOPPY] == 10
    assert counts[WorkerKind.LAZY] == 10
    assert counts[WorkerKind.HONEST] == 48


def test_clean_crowd_has_no_spammers_colluders_or_weak_workers():
    kinds = {w.profile.kind for w in Crowd.build(crowd_spec("clean", n_workers=200, seed=1))}
    assert not kinds & {
        WorkerKind.RANDOM_SPAMMER,
        WorkerKind.YES_SPAMMER,
        WorkerKind.COLLUDER,
        WorkerKind.WEAK,
    }
    assert all(w.profile.accuracy >= 0.55 for w in Crowd.build(crowd_spec("clean", n_workers=200, seed=1)))


def test_spammer_and_colluder_options_override_the_named_crowd():
    spec = crowd_spec("hostile", n_workers=50, seed=0, spammers=0.0, colluders=0.1)
    counts = Counter(w.profile.kind for w in Crowd.build(spec))
    assert counts[WorkerKind.RANDOM_SPAMMER] + counts[WorkerKind.YES_SPAMMER] == 0
    assert counts[WorkerKind.COLLUDER] == 5
    assert counts[WorkerKind.WEAK] == 5  # the rest of the hostile make-up stays


def test_an_unknown_crowd_is_refused_with_the_known_names():
    with pytest.raises(ValueError, match="hostile"):
        crowd_spec("nasty", n_workers=10, seed=0)


def test_weak_workers_are_right_about_60_percent_of_the_time_on_questions_and_box_checks():
    weak = of_kind(hostile(200), WorkerKind.WEAK)
    assert all(0.5 < w.profile.accuracy < 0.75 for w in weak)
    w = weak[0]
    right = np.mean([answer_binary(w, t) == t for t in [True, False] * 2000])
    assert abs(right - w.profile.accuracy) < 0.03
    # A tight box is good; weak workers call it bad far more often than an honest worker would.
    tight = BIG + np.array([[1.0, -1.0, 1.0, 0.0]])
    says_good = np.mean([judge_box_quality(w, tight, BIG) for _ in range(2000)])
    assert says_good < 0.8


def test_weak_workers_draw_loose_boxes_and_miss_small_objects():
    w = of_kind(hostile(200), WorkerKind.WEAK)[0]
    ious = [iou_matrix(np.array([draw_box(w, BIG, (), IMAGE)]), BIG)[0, 0] for _ in range(1000)]
    assert 0.15 < np.mean(np.array(ious) < 0.7) < 0.35
    misses = sum(draw_box(w, SMALL, (), IMAGE) is None for _ in range(1000))
    assert 300 < misses < 500


def test_sloppy_drawers_draw_loose_boxes_about_a_third_of_the_time():
    w = of_kind(hostile(100), WorkerKind.SLOPPY)[0]
    ious = [iou_matrix(np.array([draw_box(w, BIG, (), IMAGE)]), BIG)[0, 0] for _ in range(2000)]
    assert 0.25 < np.mean(np.array(ious) < 0.7) < 0.4


def test_lazy_drawers_miss_most_small_objects_but_not_big_ones():
    w = of_kind(hostile(100), WorkerKind.LAZY)[0]
    assert 0.6 < np.mean([draw_box(w, SMALL, (), IMAGE) is None for _ in range(2000)]) < 0.8
    assert all(draw_box(w, BIG, (), IMAGE) is not None for _ in range(200))
    # ... and call an image fully boxed when only a small object is missing.
    says_done = np.mean([judge_coverage(w, np.vstack([BIG, SMALL]), BIG) for _ in range(2000)])
    assert says_done > 0.6


def test_spammers_draw_junk_boxes_and_answer_box_checks_at_random_or_always_yes():
    crowd = hostile(100)
    rand = of_kind(crowd, WorkerKind.RANDOM_SPAMMER)[0]
    drawn = [draw_box(rand, BIG, (), IMAGE) for _ in range(1000)]
    gave_up = sum(b is None for b in drawn)
    assert 200 < gave_up < 400  # random spammers often claim nothing is left to box
    junk = np.array([b for b in drawn if b is not None])
    assert np.mean(iou_matrix(junk, BIG)[:, 0] >= 0.7) < 0.05
    assert 0.45 < np.mean([judge_box_quality(rand, BIG, BIG) for _ in range(2000)]) < 0.55
    yes = of_kind(crowd, WorkerKind.YES_SPAMMER)[0]
    assert all(draw_box(yes, BIG, (), IMAGE) is not None for _ in range(200))
    assert all(judge_coverage(yes, np.vstack([BIG, SMALL]), ()) for _ in range(100))
    assert all(judge_box_quality(yes, SMALL, BIG) for _ in range(100))


def test_confusable_pairs_stay_within_a_group_and_are_seeded():
    groups = [["a", "b", "c", "d"], ["x", "y"], ["solo"]]
    pairs = confusable_pairs(groups, seed=3)
    assert pairs == confusable_pairs(groups, seed=3)
    assert pairs
    for a, b in pairs:
        assert any(a in g and b in g for g in groups)
    assert all("solo" not in p for p in pairs)


def test_a_confusable_class_present_makes_the_absent_one_three_times_harder_to_reject():
    crowd = Crowd.build(crowd_spec("hostile", n_workers=10, seed=0), ["cat", "lynx"], [("cat", "lynx")])
    w = crowd.workers[0]
    alone = crowd.difficulty(w, "lynx", [])
    assert crowd.difficulty(w, "lynx", ["cat"]) == pytest.approx(3.0 * alone)


def test_colluders_give_one_answer_to_one_box_question():
    crowd = Crowd.build(crowd_spec("hostile", n_workers=10, seed=0, colluders=0.3))
    colluders = of_kind(crowd, WorkerKind.COLLUDER)
    assert len(colluders) == 3
    for n in range(50):
        key = (n, "cat", "box_quality")
        quality = {judge_box_quality(w, BIG, BIG, question_key=key) for w in colluders}
        coverage = {judge_coverage(w, np.vstack([BIG, SMALL]), BIG, question_key=key) for w in colluders}
        assert len(quality) == 1 and len(coverage) == 1
