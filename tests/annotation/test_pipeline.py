import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.pipeline import (
    AcceptBox,
    BoxDrawn,
    BoxJob,
    CoverageDecided,
    DiscardBox,
    DrawnBox,
    DrawSkipped,
    Finish,
    JobStatus,
    QualityDecided,
    QueueCoverage,
    QueueDraw,
    QueueQuality,
    ReviewReason,
    SendToReview,
    TransitionError,
    apply,
    box_drawn,
    can_verify,
    coverage_decided,
    coverage_undecidable,
    draw_skipped,
    excluded_workers,
    new_job,
    quality_decided,
    quality_undecidable,
    replay,
    review_decided,
)

S = JobStatus


def drawn(job=None, box_id=1, worker=10):
    job = job if job is not None else new_job()[0]
    return box_drawn(job, box_id, worker)[0]


def accepted(job=None, box_id=1, worker=10):
    return quality_decided(drawn(job, box_id, worker), box_id, True)[0]


# --- each transition ------------------------------------------------------------------------------------


def test_new_job_needs_a_draw_and_queues_the_first_one():
    job, effects = new_job()
    assert job.status == S.NEEDS_DRAW
    assert (job.rounds, job.boxes_drawn, job.accepted, job.history) == (0, 0, (), ())
    assert effects == [QueueDraw(round=1, shown_box_ids=())]


def test_box_drawn_queues_quality_excluding_the_drawer():
    job, effects = box_drawn(new_job()[0], box_id=7, worker=42)
    assert job.status == S.AWAITING_QUALITY
    assert (job.pending_box_id, job.pending_drawer) == (7, 42)
    assert (job.rounds, job.boxes_drawn) == (1, 1)
    assert effects == [QueueQuality(box_id=7, exclude_worker=42)]


def test_accepted_quality_accepts_the_box_then_queues_coverage_excluding_drawers():
    job, effects = quality_decided(drawn(box_id=7, worker=42), 7, True)
    assert job.status == S.AWAITING_COVERAGE
    assert job.accepted_ids == (7,) and job.pending is None
    assert effects == [AcceptBox(7), QueueCoverage(box_ids=(7,), exclude_workers=(42,))]


def test_rejected_quality_discards_the_box_and_queues_a_new_draw():
    job, effects = quality_decided(drawn(box_id=7, worker=42), 7, False)
    assert job.status == S.NEEDS_DRAW
    assert job.accepted == () and job.pending is None
    assert job.boxes_rejected == 1
    assert effects == [DiscardBox(7), QueueDraw(round=2, shown_box_ids=())]


def test_coverage_yes_finishes_with_the_accepted_boxes():
    job, effects = coverage_decided(accepted(box_id=7), True)
    assert job.status == S.DONE and job.is_finished
    assert effects == [Finish((7,))]


def test_coverage_no_queues_a_draw_showing_the_accepted_boxes():
    job, effects = coverage_decided(accepted(box_id=7), False)
    assert job.status == S.NEEDS_DRAW
    assert job.coverage_exclude == ()
    assert effects == [QueueDraw(round=2, shown_box_ids=(7,))]


def test_draw_skip_uses_a_round_and_queues_coverage_excluding_the_skipper():
    job = coverage_decided(accepted(box_id=7, worker=42), False)[0]
    job, effects = draw_skipped(job, worker=99)
    assert job.status == S.AWAITING_COVERAGE
    assert job.rounds == 2 and job.boxes_drawn == 1
    assert effects == [QueueCoverage(box_ids=(7,), exclude_workers=(42, 99))]
    assert job.history[-1].event == DrawSkipped(99, "no more instances")


def test_draw_skip_then_coverage_yes_finishes():
    job = draw_skipped(coverage_decided(accepted(box_id=7), False)[0], worker=99)[0]
    job, effects = coverage_decided(job, True)
    assert job.status == S.DONE and effects == [Finish((7,))]


def test_coverage_yes_without_any_box_goes_to_review():
    job = draw_skipped(new_job()[0], worker=5)[0]
    job, effects = coverage_decided(job, True)
    assert job.status == S.REVIEW
    assert [e.reason for e in effects if isinstance(e, SendToReview)] == [ReviewReason.NO_BOXES]


def test_coverage_no_after_a_skip_without_boxes_asks_for_another_draw():
    job = draw_skipped(new_job()[0], worker=5)[0]
    job, effects = coverage_decided(job, False)
    assert job.status == S.NEEDS_DRAW and effects == [QueueDraw(round=2, shown_box_ids=())]


def test_done_job_revised_to_not_covered_goes_back_to_drawing_keeping_its_boxes():
    # Voided spammer votes turned the finishing "every instance is boxed" into "no": an instance is unboxed.
    done = coverage_decided(accepted(box_id=7, worker=42), True)[0]
    job, effects = coverage_decided(done, False)
    assert job.status == S.NEEDS_DRAW and job.accepted_ids == (7,)
    assert effects == [QueueDraw(round=2, shown_box_ids=(7,))]
    assert replay([t.event for t in job.history]) == job


def test_done_job_revised_to_undecidable_goes_to_review():
    done = coverage_decided(accepted(box_id=7), True)[0]
    job, effects = coverage_undecidable(done)
    assert job.status == S.REVIEW and job.accepted_ids == (7,)
    assert [e.reason for e in effects if isinstance(e, SendToReview)] == [ReviewReason.COVERAGE_UNDECIDABLE]


def test_job_done_by_a_reviewer_does_not_take_a_revised_coverage_verdict():
    in_review = quality_decided(drawn(new_job(max_rounds=1)[0], box_id=1), 1, False)[0]
    done = review_decided(in_review, "close")[0]
    assert done.status == S.DONE
    with pytest.raises(TransitionError, match="in status done"):
        coverage_decided(done, False)
    with pytest.raises(TransitionError, match="in status done"):
        coverage_undecidable(done)


def test_quality_undecidable_sends_to_review_keeping_the_pending_box():
    job, effects = quality_undecidable(drawn(box_id=7, worker=42), 7)
    assert job.status == S.REVIEW
    assert job.pending == DrawnBox(7, 42)
    assert effects == [SendToReview(ReviewReason.QUALITY_UNDECIDABLE, "no consensus on the quality of box 7")]


def test_coverage_undecidable_sends_to_review():
    job, effects = coverage_undecidable(accepted(box_id=7))
    assert job.status == S.REVIEW and job.accepted_ids == (7,)
    assert len(effects) == 1 and effects[0].reason == ReviewReason.COVERAGE_UNDECIDABLE


def test_every_transition_is_recorded_in_history():
    job = accepted(box_id=7)
    assert [(t.source, t.target) for t in job.history] == [
        (S.NEEDS_DRAW, S.AWAITING_QUALITY),
        (S.AWAITING_QUALITY, S.AWAITING_COVERAGE),
    ]
    assert job.history[0].event == BoxDrawn(7, 10)
    assert job.history[1].event == QualityDecided(7, True)


def test_transitions_do_not_mutate_the_input_state():
    job = new_job()[0]
    box_drawn(job, 1, 10)
    assert job.status == S.NEEDS_DRAW and job.history == ()


# --- caps -----------------------------------------------------------------------------------------------


def test_round_cap_sends_to_review_instead_of_another_draw():
    job = new_job(max_rounds=3)[0]
    for box_id in range(3):
        job, effects = quality_decided(box_drawn(job, box_id, 10)[0], box_id, False)
    assert job.status == S.REVIEW
    assert job.rounds == 3
    assert effects[0] == DiscardBox(2)
    assert effects[1] == SendToReview(ReviewReason.ROUND_CAP, "3 draw rounds used, the cap is 3")
    assert not any(isinstance(e, QueueDraw) for e in effects)


def test_round_cap_counts_skips_too():
    job = new_job(max_rounds=2)[0]
    job = coverage_decided(draw_skipped(job, 1)[0], False)[0]
    job, effects = coverage_decided(draw_skipped(job, 2)[0], False)
    assert job.status == S.REVIEW and effects[0].reason == ReviewReason.ROUND_CAP


def test_box_cap_sends_to_review_when_coverage_still_says_no():
    job = new_job(max_boxes=2)[0]
    job = coverage_decided(accepted(job, box_id=1, worker=10), False)[0]
    job = accepted(job, box_id=2, worker=11)
    job, effects = coverage_decided(job, False)
    assert job.status == S.REVIEW
    assert effects == [SendToReview(ReviewReason.BOX_CAP, "2 boxes accepted, the cap is 2")]


def test_box_cap_still_lets_coverage_finish_the_job():
    job = accepted(new_job(max_boxes=1)[0], box_id=1)
    job, effects = coverage_decided(job, True)
    assert job.status == S.DONE and effects == [Finish((1,))]


def test_caps_must_be_positive():
    with pytest.raises(ValueError):
        new_job(max_boxes=0)
    with pytest.raises(ValueError):
        new_job(max_rounds=0)


# --- the self-verification ban --------------------------------------------------------------------------


def test_drawer_cannot_verify_their_own_box():
    job = drawn(box_id=7, worker=42)
    assert not can_verify(job, 42, 7)
    assert not can_verify(job, 42)
    assert can_verify(job, 43, 7)
    assert excluded_workers(job) == {42}


def test_nobody_can_verify_a_box_that_is_not_pending():
    job = drawn(box_id=7, worker=42)
    assert not can_verify(job, 43, 8)


def test_drawers_of_accepted_boxes_cannot_answer_coverage():
    job = coverage_decided(accepted(box_id=1, worker=10), False)[0]
    job = accepted(job, box_id=2, worker=11)
    assert excluded_workers(job) == {10, 11}
    assert not can_verify(job, 10) and not can_verify(job, 11)
    assert can_verify(job, 12)


def test_drawer_of_a_rejected_box_may_verify_the_next_drawers_box():
    job = quality_decided(drawn(box_id=1, worker=10), 1, False)[0]
    job = drawn(job, box_id=2, worker=11)
    assert can_verify(job, 10, 2) and not can_verify(job, 11, 2)


def test_no_verification_is_open_while_drawing_or_when_finished():
    assert not can_verify(new_job()[0], 1)
    assert excluded_workers(new_job()[0]) == frozenset()
    done = coverage_decided(accepted(box_id=1, worker=10), True)[0]
    assert not can_verify(done, 99)


# --- coming back from review ---------------------------------------------------------------------------


def test_a_reviewers_quality_verdict_resumes_a_job_in_review_for_that_box():
    in_review = quality_undecidable(drawn(box_id=1, worker=10), 1)[0]
    job, effects = quality_decided(in_review, 1, True)
    assert job.status == S.AWAITING_COVERAGE and job.accepted_ids == (1,) and job.pending is None
    assert effects == [AcceptBox(1), QueueCoverage(box_ids=(1,), exclude_workers=(10,))]
    job, effects = quality_decided(in_review, 1, False)
    assert job.status == S.NEEDS_DRAW and effects == [DiscardBox(1), QueueDraw(round=2, shown_box_ids=())]
    with pytest.raises(TransitionError, match="pending box is 1"):
        quality_decided(in_review, 2, True)
    with pytest.raises(TransitionError, match="in status review"):
        coverage_decided(in_review, True)


def test_a_reviewers_coverage_verdict_resumes_a_job_in_review_for_coverage():
    in_review = coverage_undecidable(accepted(box_id=1))[0]
    job, effects = coverage_decided(in_review, True)
    assert job.status == S.DONE and effects == [Finish((1,))]
    job, effects = coverage_decided(in_review, False)
    assert job.status == S.NEEDS_DRAW and effects == [QueueDraw(round=2, shown_box_ids=(1,))]
    with pytest.raises(TransitionError, match="in status review"):
        quality_decided(in_review, 1, True)


def test_review_accept_accepts_the_pending_box_and_finishes_the_job():
    in_review = second_box_in_review()
    job, effects = review_decided(in_review, "accept")
    assert job.status == S.DONE and job.accepted_ids == (1, 2) and job.pending is None
    assert effects == [AcceptBox(2), Finish((1, 2))]


def second_box_in_review():
    """Box 1 accepted, coverage said no, box 2 drawn and its quality undecidable."""
    job = coverage_decided(accepted(box_id=1, worker=10), False)[0]
    return quality_undecidable(drawn(job, box_id=2, worker=11), 2)[0]


def test_review_redraw_discards_the_pending_box_and_makes_room_under_both_caps():
    capped = coverage_decided(accepted(new_job(max_boxes=1, max_rounds=5)[0], box_id=1), False)[0]
    assert capped.status == S.REVIEW
    job, effects = review_decided(capped, "redraw", extra_rounds=3)
    assert job.status == S.NEEDS_DRAW and job.max_rounds == 5 and job.max_boxes == 4
    assert effects == [QueueDraw(round=2, shown_box_ids=(1,))]
    in_review = quality_undecidable(drawn(box_id=7), 7)[0]
    job, effects = review_decided(in_review, "redraw")
    assert effects == [DiscardBox(7), QueueDraw(round=2, shown_box_ids=())]
    assert job.boxes_rejected == 1 and job.pending is None


def test_review_close_discards_the_pending_box_and_keeps_the_accepted_ones():
    in_review = second_box_in_review()
    job, effects = review_decided(in_review, "close")
    assert job.status == S.DONE and job.accepted_ids == (1,)
    assert effects == [DiscardBox(2), Finish((1,))]
    with pytest.raises(ValueError):
        review_decided(in_review, "maybe")


def test_a_job_brought_back_from_review_replays_from_its_event_log():
    job = coverage_decided(accepted(new_job(max_rounds=1)[0], box_id=1), False)[0]
    job = review_decided(job, "redraw", extra_rounds=2)[0]
    job = quality_decided(drawn(job, box_id=2, worker=11), 2, True)[0]
    job = coverage_decided(job, True)[0]
    assert job.status == S.DONE and job.accepted_ids == (1, 2)
    assert replay([t.event for t in job.history], max_rounds=1) == job
    assert BoxJob.from_dict(json.loads(json.dumps(job.to_dict()))) == job


# --- invalid transitions --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "state, action",
    [
        ("needs_draw", lambda j: quality_decided(j, 1, True)),
        ("needs_draw", lambda j: quality_undecidable(j, 1)),
        ("needs_draw", lambda j: coverage_decided(j, True)),
        ("needs_draw", lambda j: coverage_undecidable(j)),
        ("awaiting_quality", lambda j: box_drawn(j, 2, 10)),
        ("awaiting_quality", lambda j: draw_skipped(j, 10)),
        ("awaiting_quality", lambda j: coverage_decided(j, False)),
        ("awaiting_quality", lambda j: coverage_undecidable(j)),
        ("awaiting_coverage", lambda j: box_drawn(j, 2, 10)),
        ("awaiting_coverage", lambda j: draw_skipped(j, 10)),
        ("awaiting_coverage", lambda j: quality_decided(j, 1, True)),
        ("awaiting_coverage", lambda j: quality_undecidable(j, 1)),
        ("done", lambda j: box_drawn(j, 2, 10)),
        ("done", lambda j: coverage_decided(j, True)),
        ("review", lambda j: box_drawn(j, 2, 10)),
        ("review", lambda j: quality_decided(j, 1, True)),
        ("review", lambda j: coverage_decided(j, True)),
        ("awaiting_quality", lambda j: review_decided(j, "accept")),
        ("done", lambda j: review_decided(j, "redraw")),
    ],
)
def test_events_invalid_for_the_current_status_are_refused(state, action):
    jobs = {
        "needs_draw": new_job()[0],
        "awaiting_quality": drawn(box_id=1),
        "awaiting_coverage": accepted(box_id=1),
        "done": coverage_decided(accepted(box_id=1), True)[0],
        # In review for a reason other than an undecidable question: only a reviewer's verdict moves it.
        "review": quality_decided(drawn(new_job(max_rounds=1)[0], box_id=1), 1, False)[0],
    }
    job = jobs[state]
    assert job.status == state
    with pytest.raises(TransitionError, match=f"in status {state}"):
        action(job)


def test_quality_decision_for_another_box_is_refused():
    job = drawn(box_id=7)
    with pytest.raises(TransitionError, match="pending box is 7"):
        quality_decided(job, 8, True)
    with pytest.raises(TransitionError, match="pending box is 7"):
        quality_undecidable(job, 8)


def test_reusing_an_accepted_box_id_is_refused():
    job = coverage_decided(accepted(box_id=7), False)[0]
    with pytest.raises(TransitionError, match="already an accepted box"):
        box_drawn(job, 7, 11)


def test_apply_refuses_something_that_is_not_an_event():
    with pytest.raises(TypeError):
        apply(new_job()[0], "box_drawn")  # type: ignore[arg-type]


# --- serialization --------------------------------------------------------------------------------------


def _busy_job():
    job = new_job(max_boxes=10, max_rounds=12)[0]
    job = quality_decided(drawn(job, box_id=1, worker=10), 1, False)[0]
    job = coverage_decided(accepted(job, box_id=2, worker=11), False)[0]
    job = draw_skipped(job, worker=12, reason="too small to box")[0]
    return job


@pytest.mark.parametrize(
    "job",
    [
        new_job()[0],
        drawn(box_id=3, worker=4),
        _busy_job(),
        coverage_decided(_busy_job(), True)[0],
        quality_undecidable(drawn(box_id=3, worker=4), 3)[0],
    ],
    ids=["new", "awaiting_quality", "awaiting_coverage_after_skip", "done", "review"],
)
def test_serialization_round_trips_through_json(job):
    data = json.loads(json.dumps(job.to_dict()))
    restored = BoxJob.from_dict(data)
    assert restored == job
    # and the restored job keeps working the same way
    if job.status == S.AWAITING_COVERAGE:
        assert coverage_decided(restored, True) == coverage_decided(job, True)


def test_from_dict_refuses_unknown_versions_and_inconsistent_states():
    data = drawn(box_id=3).to_dict()
    with pytest.raises(ValueError, match="version"):
        BoxJob.from_dict({**data, "version": 99})
    with pytest.raises(ValueError, match="pending box"):
        BoxJob.from_dict({**data, "pending": None})
    with pytest.raises(ValueError, match="malformed"):
        BoxJob.from_dict({k: v for k, v in data.items() if k != "rounds"})
    with pytest.raises(ValueError, match="unknown box job event"):
        BoxJob.from_dict({**data, "history": [{"event": {"type": "nope"}, "source": "x", "target": "y"}]})


def test_replaying_the_event_log_rebuilds_the_state():
    job = _busy_job()
    assert replay([t.event for t in job.history], max_boxes=10, max_rounds=12) == job


# --- a full happy path ----------------------------------------------------------------------------------


def test_happy_path_for_an_image_with_three_instances():
    """Three dogs; one sloppy box is rejected and redrawn; coverage says "no" twice, then "yes"."""
    all_effects = []

    def step(result):
        nonlocal job
        job, effects = result
        all_effects.extend(effects)
        return effects

    job, first = new_job()
    all_effects.extend(first)
    step(box_drawn(job, 101, worker=1))
    assert can_verify(job, 2, 101)
    step(quality_decided(job, 101, True))
    assert step(coverage_decided(job, False)) == [QueueDraw(2, (101,))]
    step(box_drawn(job, 102, worker=2))
    assert not can_verify(job, 2, 102)
    assert step(quality_decided(job, 102, False)) == [DiscardBox(102), QueueDraw(3, (101,))]
    step(box_drawn(job, 103, worker=3))
    step(quality_decided(job, 103, True))
    assert excluded_workers(job) == {1, 3}
    step(coverage_decided(job, False))
    step(box_drawn(job, 104, worker=1))
    step(quality_decided(job, 104, True))
    assert step(coverage_decided(job, True)) == [Finish((101, 103, 104))]

    assert job.status == S.DONE
    assert (job.rounds, job.boxes_drawn, job.boxes_rejected) == (4, 4, 1)
    assert len(job.history) == 11  # 4 draws, 4 quality and 3 coverage decisions
    counts = {
        kind: sum(isinstance(e, kind) for e in all_effects)
        for kind in (QueueDraw, QueueQuality, QueueCoverage)
    }
    assert counts == {QueueDraw: 4, QueueQuality: 4, QueueCoverage: 3}
    assert [e.box_id for e in all_effects if isinstance(e, AcceptBox)] == [101, 103, 104]


# --- any sequence of outcomes terminates within the caps ------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    outcomes=st.lists(st.integers(0, 99), min_size=0, max_size=400),
    max_boxes=st.integers(1, 6),
    max_rounds=st.integers(1, 10),
)
def test_any_run_respects_the_caps_and_the_ban(outcomes, max_boxes, max_rounds):
    job, effects = new_job(max_boxes=max_boxes, max_rounds=max_rounds)
    feed = iter(outcomes)
    next_box = 0
    questions = 0
    while not job.is_finished:
        r = next(feed, 50)
        if job.status == S.NEEDS_DRAW:
            assert any(isinstance(e, QueueDraw) for e in effects)
            if r < 15:
                job, effects = draw_skipped(job, worker=r % 5)
            else:
                next_box += 1
                job, effects = box_drawn(job, next_box, worker=r % 5)
        elif job.status == S.AWAITING_QUALITY:
            (q,) = [e for e in effects if isinstance(e, QueueQuality)]
            assert q.exclude_worker == job.pending_drawer and not can_verify(job, q.exclude_worker)
            questions += 1
            if r < 3:
                job, effects = quality_undecidable(job, job.pending_box_id)
            else:
                job, effects = quality_decided(job, job.pending_box_id, r % 2 == 0)
        else:
            (c,) = [e for e in effects if isinstance(e, QueueCoverage)]
            assert set(c.exclude_workers) >= {b.drawer for b in job.accepted}
            questions += 1
            if r < 3:
                job, effects = coverage_undecidable(job)
            else:
                job, effects = coverage_decided(job, r % 3 == 0)
    assert job.rounds <= max_rounds and len(job.accepted) <= max_boxes
    assert questions <= 2 * max_rounds
    if job.status == S.DONE:
        assert effects == [Finish(job.accepted_ids)] and job.accepted
    else:
        assert isinstance(effects[-1], SendToReview)
    assert BoxJob.from_dict(json.loads(json.dumps(job.to_dict()))) == job
    assert replay([t.event for t in job.history], max_boxes, max_rounds) == job


def test_event_dataclasses_are_part_of_the_public_vocabulary():
    assert apply(new_job()[0], BoxDrawn(1, 2))[0].pending == DrawnBox(1, 2)
    assert apply(accepted(box_id=1), CoverageDecided(True))[0].status == S.DONE
