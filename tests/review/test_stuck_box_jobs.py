"""The stuck sweep and the box pipeline's verification stages (issue 31's server run ended with a box job awaiting
coverage that every worker's lease said nothing about): a coverage question nobody the queue would hand it to
can answer is settled or sent to review, whoever else has worked in the dataset; a job awaiting a verification
that no question asks any more goes to review with an item; a job whose question someone can still take waits."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.management import call_command

from annotation import queue
from annotation.models import BoxJob, Task, TaskState
from boxes import services as boxes
from boxes import stranded
from consensus import binary_vote, starved
from consensus.calibration import build_table
from consensus.models import CalibrationTable, Question, QuestionKind, QuestionState
from crowd.models import BundleSize, StudyLink
from crowd.providers import base, external_link
from review import stuck
from review.models import OPEN_STATES, ReviewItem
from tests import factories
from tests.annotation.boxhelpers import answer, box_rule_use, image, workers

pytestmark = pytest.mark.django_db


@pytest.fixture
def concept():
    return factories.ConceptFactory(wnid="n02084071", name="dog")


@pytest.fixture
def consensus_boxes(settings):
    box_rule_use(settings, "consensus")  # the default, made explicit


def quality_table(concept):
    """A measured table for box quality, so two or three votes decide a box."""
    rng = np.random.default_rng(0)
    table = build_table([list(rng.random(8) < (0.92 if i % 2 else 0.08)) for i in range(60)])
    CalibrationTable.objects.create(
        kind=QuestionKind.BOX_QUALITY,
        concept=concept,
        table=table.to_dict(),
        n_images=table.n_images,
        n_votes=table.n_votes,
        method=table.method,
        last_vote_id=0,
    )


def awaiting_coverage(dataset, concept, crowd):
    """A job whose box the crowd accepted, awaiting coverage; returns (job, its coverage question)."""
    quality_table(concept)
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    drawer, *voters = crowd
    answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    for voter in voters:
        if answer(voter, "question", {"answer": True}).state == TaskState.DONE:
            break
    job.refresh_from_db()
    assert job.status == "awaiting_coverage"
    return job, Question.objects.get(kind=QuestionKind.BOX_COVERAGE, state=QuestionState.OPEN)


def participant_in_a_binary_vote_session(dataset, concept):
    """A study-link participant who answered a plain vote of the dataset in a session still open (of the
    `binary_vote` kind: the session leases nothing else)."""
    binary_vote.vote_tasks_create(dataset=dataset, concept=concept, images=[image(dataset)], answers_wanted=3)
    BundleSize.objects.create(dataset=dataset, kind="binary_vote", size=5)
    study = StudyLink.objects.create(dataset=dataset, kind="binary_vote")
    bundle = external_link.study_session_start(study=study, participant="P9")
    step = base.bundle_next(bundle)
    assert step.assignment is not None and step.assignment.task.kind == "binary_vote"
    step = base.bundle_submit(
        bundle, assignment_id=step.assignment.pk, answer={"answer": True}, idempotency_key="p9-1"
    )
    assert step.bundle.state == "open"
    return bundle.worker


def test_a_coverage_question_only_a_session_of_another_kind_could_reach_is_settled_and_the_job_moves_on(
    consensus_boxes, dataset, concept
):
    """The disagreement of issue 31: the sweep counted a worker the queue would hand nothing (a study
    participant whose open session leases binary votes only) as able to vote, so the job stayed awaiting
    coverage while every lease came back empty. Now both ask one condition: the job leaves coverage."""
    crowd = workers(4)
    job, coverage = awaiting_coverage(dataset, concept, crowd)
    participant = participant_in_a_binary_vote_session(dataset, concept)
    drawer, *voters = crowd
    # Every token worker but the drawer (barred) votes; two yes and one no decide nothing under the prior.
    for voter, value in zip(voters, (True, False, True), strict=True):
        answer(voter, "question", {"answer": value})
    coverage.refresh_from_db()
    assert coverage.state == QuestionState.OPEN, "the test needs coverage undecided with nobody left"
    for worker in crowd:
        assert queue.task_lease_next(worker=worker, dataset_id=dataset.pk, kinds_wanted=["question"]) is None
    # The participant's only way in is their session, which leases binary votes: never the coverage task.
    assert participant.source == "external"

    assert [q.pk for q in starved.questions_starved(idle_seconds=0)] == [coverage.pk]
    report = stuck.stuck_enqueue(dataset_id=dataset.pk, starved_after=0)
    assert sum(report.starved_settled.values()) == 1
    job.refresh_from_db()
    assert job.status != "awaiting_coverage"
    if job.status == "review":
        assert ReviewItem.objects.filter(state__in=OPEN_STATES, image_id=job.image_id).exists()


def test_a_box_job_awaiting_coverage_that_no_question_asks_any_more_goes_to_review_with_an_item(
    consensus_boxes, dataset, concept
):
    """A job awaiting coverage whose coverage question left the queue without moving it (its verdict lost on
    the way: data from before a pipeline was connected, a decision dropped as stale) would wait for good with
    every worker told there is nothing to do; the sweep sends it to review, where a person decides."""
    job, coverage = awaiting_coverage(dataset, concept, workers(4))
    Question.objects.filter(pk=coverage.pk).update(state=QuestionState.ACCEPTED)
    Task.objects.filter(pk=coverage.task_id).update(state=TaskState.DONE)
    assert stranded.box_jobs_stranded(idle_seconds=3600) == [], "untouched for less than the wait"
    assert stranded.box_jobs_stranded(idle_seconds=0) == [job.pk]

    out = io.StringIO()
    call_command("review_stuck", "--starved-after", "0", stdout=out)
    assert "box jobs whose verification nobody can answer sent to review: 1" in out.getvalue()
    job.refresh_from_db()
    assert job.status == "review" and job.review_reason == "coverage_undecidable"
    item = ReviewItem.objects.get(state__in=OPEN_STATES)
    assert item.subject == {"type": "box_job", "id": job.pk} and item.image_id == job.image_id
    assert stuck.stuck_enqueue(starved_after=0).box_jobs_stranded == 0, "sent once"


def test_a_box_job_awaiting_quality_whose_question_is_gone_goes_to_review_and_one_still_asked_waits(
    consensus_boxes, dataset, concept
):
    quality_table(concept)
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    drawer, voter = workers(2)
    answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    # The voter has worked in the dataset (a plain vote), so the quality question waits for them.
    binary_vote.vote_tasks_create(dataset=dataset, concept=concept, images=[image(dataset)], answers_wanted=3)
    answer(voter, "binary_vote", {"answer": True})
    job.refresh_from_db()
    assert job.status == "awaiting_quality"
    quality = Question.objects.get(kind=QuestionKind.BOX_QUALITY)
    assert stranded.box_jobs_stranded(idle_seconds=0) == [], "its question is open: someone can take it"
    assert stuck.stuck_enqueue(starved_after=0).box_jobs_stranded == 0
    assert BoxJob.objects.get(pk=job.pk).status == "awaiting_quality"

    Question.objects.filter(pk=quality.pk).update(state=QuestionState.REJECTED)
    Task.objects.filter(pk=quality.task_id).update(state=TaskState.DONE)
    assert stuck.stuck_enqueue(starved_after=0).box_jobs_stranded == 1
    job.refresh_from_db()
    assert job.status == "review" and job.review_reason == "quality_undecidable"
    item = ReviewItem.objects.get(state__in=OPEN_STATES)
    assert item.subject == {"type": "box_job", "id": job.pk} and item.box_a_id == quality.box_id
