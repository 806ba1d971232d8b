"""A box job started from a model's proposals (pure state machine): each proposal is asked QUALITY in turn,
accepted ones join the accepted boxes, rejected ones are discarded, and after the last the ordinary loop takes
over (COVERAGE, then DRAW for what is missing). A proposal has no drawer, so it excludes nobody."""

import json

import pytest

from annotation.pipeline import (
    AcceptBox,
    BoxJob,
    DiscardBox,
    Finish,
    JobStatus,
    ProposalsQueued,
    QueueCoverage,
    QueueDraw,
    QueueQuality,
    TransitionError,
    box_drawn,
    can_verify,
    coverage_decided,
    excluded_workers,
    new_job,
    proposals_queued,
    quality_decided,
    quality_undecidable,
    replay,
    review_decided,
)

S = JobStatus


def started(*ids, max_boxes=25):
    job, _ = new_job(max_boxes=max_boxes)
    return proposals_queued(job, list(ids))


def test_proposals_are_asked_quality_one_after_another_before_any_draw():
    job, effects = started(11, 12)
    assert job.status == S.AWAITING_QUALITY and job.pending_box_id == 11 and job.proposals == (12,)
    assert effects == [QueueQuality(box_id=11, exclude_worker=None)]
    job, effects = quality_decided(job, 11, True)
    assert effects == [AcceptBox(11), QueueQuality(box_id=12, exclude_worker=None)]
    assert job.accepted_ids == (11,) and job.rounds == 0


def test_after_the_last_proposal_coverage_is_asked_and_a_no_queues_a_draw_for_what_is_missing():
    job, _ = started(11, 12)
    job, _ = quality_decided(job, 11, True)
    job, effects = quality_decided(job, 12, False)
    assert effects == [DiscardBox(12), QueueCoverage(box_ids=(11,), exclude_workers=())]
    assert job.proposals_rejected == 1
    job, effects = coverage_decided(job, False)
    assert effects == [QueueDraw(round=1, shown_box_ids=(11,))]
    job, effects = box_drawn(job, 20, worker=7)
    assert effects == [QueueQuality(box_id=20, exclude_worker=7)]
    job, effects = quality_decided(job, 20, True)
    assert effects[-1] == QueueCoverage(box_ids=(11, 20), exclude_workers=(7,))
    job, effects = coverage_decided(job, True)
    assert job.status == S.DONE and effects == [Finish((11, 20))]


def test_when_every_proposal_is_rejected_the_job_draws():
    job, _ = started(11)
    job, effects = quality_decided(job, 11, False)
    assert effects == [DiscardBox(11), QueueDraw(round=1, shown_box_ids=())]
    assert job.status == S.NEEDS_DRAW and not job.accepted


def test_a_proposal_excludes_nobody_from_its_question():
    job, _ = started(11)
    assert excluded_workers(job) == frozenset()
    assert can_verify(job, worker=3)


def test_proposals_only_start_a_new_job_and_respect_the_box_cap():
    job, _ = new_job(max_boxes=2)
    with pytest.raises(TransitionError):
        proposals_queued(job, [1, 2, 3])
    with pytest.raises(TransitionError):
        proposals_queued(job, [])
    drawn, _ = box_drawn(job, 5, worker=1)
    with pytest.raises(TransitionError):
        proposals_queued(drawn, [1])
    with pytest.raises(ValueError):
        BoxJob(status=S.AWAITING_QUALITY, pending=None, proposals=(1,), proposed=1)


def test_the_event_log_replays_a_job_started_from_proposals_through_json():
    job, _ = started(11, 12, 13)
    job, _ = quality_decided(job, 11, True)
    job, _ = quality_decided(job, 12, False)
    stored = json.loads(json.dumps(job.to_dict()))
    assert BoxJob.from_dict(stored) == job
    events = [t.event for t in BoxJob.from_dict(stored).history]
    assert events[0] == ProposalsQueued((11, 12, 13))
    assert replay(events) == job


def test_a_state_stored_before_proposals_existed_still_loads():
    job, _ = new_job()
    job, _ = box_drawn(job, 5, worker=1)
    old = job.to_dict()
    for key in ("proposals", "proposed", "proposals_rejected"):
        del old[key]
    assert BoxJob.from_dict(old) == job


def test_a_reviewer_verdict_on_an_undecidable_proposal_goes_on_to_the_next_proposal():
    job, _ = started(11, 12)
    job, _ = quality_undecidable(job, 11)
    assert job.status == S.REVIEW
    job, effects = quality_decided(job, 11, True)
    assert effects == [AcceptBox(11), QueueQuality(box_id=12, exclude_worker=None)]


@pytest.mark.parametrize("outcome", ["accept", "close", "redraw"])
def test_a_review_verdict_on_the_job_drops_the_proposals_never_asked(outcome):
    job, _ = started(11, 12, 13)
    job, _ = quality_undecidable(job, 11)
    job, effects = review_decided(job, outcome)
    assert DiscardBox(12) in effects and DiscardBox(13) in effects
    assert job.proposals == () and job.pending is None
    assert (AcceptBox(11) in effects) == (outcome == "accept")
