"""The simulated reviewer decides review items from the ground truth, as the reviewer API offers them."""

from __future__ import annotations

import numpy as np

from simulator import reviewer

CAT = np.array([[10.0, 10.0, 110.0, 90.0], [200.0, 50.0, 260.0, 110.0]])


def box(x1, y1, x2, y2, wnid="cat"):
    return {"x1": x1, "y1": y1, "x2": x2, "y2": y2, "concept": {"wnid": wnid}}


def test_two_boxes_on_one_instance_are_a_duplicate_and_the_tighter_one_is_kept():
    tight, loose = box(10, 10, 110, 90), box(5, 5, 118, 96)
    assert reviewer.decide_duplicate(tight, loose, CAT) == "duplicate_keep_a"
    assert reviewer.decide_duplicate(loose, tight, CAT) == "duplicate_keep_b"


def test_boxes_on_two_instances_are_distinct():
    assert reviewer.decide_duplicate(box(10, 10, 110, 90), box(200, 50, 260, 110), CAT) == "distinct"


def test_cross_class_keeps_right_boxes_relabels_a_box_of_the_other_class_and_removes_junk():
    truth = {"cat": CAT[:1], "dog": np.array([[200.0, 50.0, 260.0, 110.0]])}
    assert (
        reviewer.decide_cross_class(box(10, 10, 110, 90), box(200, 50, 260, 110, "dog"), truth)
        == "both_right"
    )
    assert (
        reviewer.decide_cross_class(box(200, 50, 260, 110), box(200, 50, 258, 110, "dog"), truth)
        == "relabel_a"
    )
    assert (
        reviewer.decide_cross_class(box(10, 10, 110, 90), box(400, 400, 450, 450, "dog"), truth) == "remove_b"
    )


def test_an_ambiguous_box_is_accepted_only_when_tight():
    assert reviewer.decide_box(box(11, 10, 110, 91), CAT) == "accept"
    assert reviewer.decide_box(box(0, 0, 140, 120), CAT) == "reject"
    assert reviewer.decide_box(box(0, 0, 10, 10), np.zeros((0, 4))) == "reject"


def test_the_reviewer_slips_at_the_error_rate_to_another_offered_choice():
    rng = np.random.default_rng(0)
    choices = ("accept", "reject")
    made = [reviewer.with_error("accept", choices, rng, 0.1) for _ in range(5000)]
    assert abs(made.count("reject") / 5000 - 0.1) < 0.015
    assert reviewer.with_error("accept", ("accept",), rng, 1.0) == "accept"


def test_a_quality_box_on_an_instance_another_accepted_box_already_covers_is_rejected():
    tight = box(11, 10, 110, 91)
    assert reviewer.decide_box(tight, CAT, [box(10, 10, 110, 90)]) == "reject"
    assert reviewer.decide_box(tight, CAT, [box(200, 50, 260, 110)]) == "accept"


def test_a_coverage_question_is_accepted_only_when_the_shown_boxes_cover_every_instance():
    both = [box(10, 10, 110, 90), box(200, 50, 260, 110)]
    assert reviewer.decide_coverage(both, CAT) == "accept"
    assert reviewer.decide_coverage(both[:1], CAT) == "reject"
    assert reviewer.decide_coverage([], np.zeros((0, 4))) == "accept"


def test_a_box_job_takes_only_the_decisions_box_jobs_offer_accept_close_or_redraw():
    # Adapted: the old reviewer answered "reject", which box-job items do not offer (the API refused it).
    first, second = box(10, 10, 110, 90), box(200, 50, 260, 110)
    assert reviewer.decide_job(second, [first], CAT) == "accept"  # the pending box completes the job
    assert reviewer.decide_job(None, [first, second], CAT) == "close"  # already complete
    assert reviewer.decide_job(box(0, 0, 300, 200), [first, second], CAT) == "close"  # junk pending box
    assert reviewer.decide_job(box(0, 0, 300, 200), [first], CAT) == "redraw"  # junk, an instance missing
    assert reviewer.decide_job(None, [first], CAT) == "redraw"
    assert reviewer.decide_job(box(11, 10, 110, 91), [first], CAT) == "redraw"  # a second box on one instance
    assert reviewer.decide_job(None, [], np.zeros((0, 4))) == "close"
