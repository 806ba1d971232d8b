"""The box pipeline's questions through the calibrated consensus rule (the default, `boxes.questions`): quality and coverage questions are
consensus Questions, the drawers can never vote on them (also when they waited for a calibration table), each
new coverage round is a new question, and the decisions move the box job on."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import IntegrityError, transaction

from annotation import questions
from annotation.models import Box, BoxJob, BoxState, Task, TaskExclusion
from boxes import questions as box_questions
from boxes import services as boxes
from consensus import question_kind
from consensus.calibration import build_table
from consensus.models import CalibrationTable, Question, QuestionKind, QuestionRole, QuestionState
from tests import factories
from tests.annotation.boxhelpers import answer, box_rule_use, image, lease, workers

pytestmark = pytest.mark.django_db


@pytest.fixture
def connected(settings):
    box_rule_use(settings, "consensus")  # the default, made explicit


@pytest.fixture
def fixed(settings):
    box_rule_use(settings, "fixed")


@pytest.fixture
def concept():
    return factories.ConceptFactory(wnid="n02084071", name="dog")


def with_table(concept, kind=QuestionKind.BOX_QUALITY):
    rng = np.random.default_rng(0)
    sequences = [list(rng.random(8) < (0.92 if i % 2 else 0.08)) for i in range(60)]
    table = build_table(sequences)
    CalibrationTable.objects.create(
        kind=kind,
        concept=concept,
        table=table.to_dict(),
        n_images=table.n_images,
        n_votes=table.n_votes,
        method=table.method,
        last_vote_id=0,
    )


def test_quality_goes_to_consensus_and_its_decision_accepts_the_box(connected, dataset, concept):
    with_table(concept)
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    drawer, *voters = workers(12)
    task = answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    box = Box.objects.get(pk=task.result["box_id"])
    question = Question.objects.get(box=box)
    assert question.kind == QuestionKind.BOX_QUALITY and question.role == QuestionRole.PRODUCTION
    assert not Task.objects.filter(kind=questions.QUALITY).exists()
    assert lease(drawer, "question") is None  # a worker never verifies their own box
    for voter in voters:
        if answer(voter, "question", {"answer": True}).state == "done":
            break
    box.refresh_from_db()
    assert box.state == BoxState.ACCEPTED
    assert BoxJob.objects.get(pk=job.pk).status == "awaiting_coverage"
    coverage = Question.objects.get(kind=QuestionKind.BOX_COVERAGE)
    assert (coverage.image_id, coverage.round, coverage.box_id) == (job.image_id, 1, None)
    assert not Task.objects.filter(kind=questions.COVERAGE).exists()


def test_a_question_served_on_the_prior_table_also_excludes_the_drawer(connected, dataset, concept):
    boxes.box_job_start(image=image(dataset), concept=concept)
    (drawer,) = workers(1)
    answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    question = Question.objects.get()
    assert question.role == QuestionRole.PRODUCTION and question.task_id is not None
    assert list(TaskExclusion.objects.filter(task=question.task).values_list("worker_id", flat=True)) == [
        drawer.pk
    ]


def test_consensus_is_the_default_rule_of_the_box_questions(settings):
    settings.CROWDLABEL = {k: v for k, v in settings.CROWDLABEL.items() if k != "BOX_QUESTION_BACKEND"}
    assert box_questions.backend_chosen() == "consensus"


def test_the_fixed_rule_stays_selectable(fixed, dataset, concept):
    assert box_questions.backend_chosen() == "fixed"
    boxes.box_job_start(image=image(dataset), concept=concept)
    (drawer,) = workers(1)
    answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    (question,) = Question.objects.filter(kind=QuestionKind.BOX_QUALITY)
    assert question.rule and question.task.kind == questions.QUALITY


def vote_until_decided(voters, value):
    for voter in voters:
        if answer(voter, "question", {"answer": value}).state == "done":
            return
    raise AssertionError("the question took every voter without a decision")


def test_each_coverage_round_is_a_new_question_showing_every_accepted_box(connected, dataset, concept):
    with_table(concept)
    with_table(concept, QuestionKind.BOX_COVERAGE)
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    first, second, *voters = workers(14)
    answer(first, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    vote_until_decided(voters, True)  # quality: accepted
    vote_until_decided(voters, False)  # coverage round 1: an instance is missing
    answer(second, boxes.DRAW_KIND, {"box": [200, 200, 300, 300]})
    vote_until_decided(voters, True)  # quality of the second box
    rounds = list(Question.objects.filter(kind=QuestionKind.BOX_COVERAGE).values_list("round", "state"))
    assert rounds == [(1, QuestionState.REJECTED), (2, QuestionState.OPEN)]
    open_round = Question.objects.get(kind=QuestionKind.BOX_COVERAGE, round=2)
    payload = question_kind.public_payload(open_round.task)
    assert "box" not in payload
    assert payload["boxes"] == [
        {"x1": 10.0, "y1": 10.0, "x2": 110.0, "y2": 90.0},
        {"x1": 200.0, "y1": 200.0, "x2": 300.0, "y2": 300.0},
    ]
    assert set(TaskExclusion.objects.filter(task=open_round.task).values_list("worker_id", flat=True)) == {
        first.pk,
        second.pk,
    }
    vote_until_decided(voters, True)
    assert BoxJob.objects.get(pk=job.pk).status == "done"


def test_the_database_refuses_a_second_open_coverage_question_for_one_image(connected, dataset, concept):
    with_table(concept)
    with_table(concept, QuestionKind.BOX_COVERAGE)
    boxes.box_job_start(image=image(dataset), concept=concept)
    drawer, *voters = workers(12)
    answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    vote_until_decided(voters, True)
    open_one = Question.objects.get(kind=QuestionKind.BOX_COVERAGE)
    with pytest.raises(IntegrityError), transaction.atomic():
        Question.objects.create(
            kind=open_one.kind,
            dataset=open_one.dataset,
            concept=open_one.concept,
            image=open_one.image,
            round=open_one.round + 1,
        )


def test_without_a_table_box_questions_start_from_the_prior_and_are_served_at_once(
    connected, dataset, concept
):
    """No calibration batch to wait for: the prior table (workers right 90% of the time) decides after 3 more
    yes than no, so the job moves on."""
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    drawer, *voters = workers(6)
    answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    quality = Question.objects.get(kind=QuestionKind.BOX_QUALITY)
    assert quality.role == QuestionRole.PRODUCTION and quality.state == QuestionState.OPEN
    assert CalibrationTable.objects.get(kind=QuestionKind.BOX_QUALITY, concept=concept).n_images == 0
    for voter in voters[:2]:
        assert answer(voter, "question", {"answer": True}).state == "open"
    assert answer(voters[2], "question", {"answer": True}).state == "done"
    quality.refresh_from_db()
    assert quality.state == QuestionState.ACCEPTED
    assert BoxJob.objects.get(pk=job.pk).status == "awaiting_coverage"


def test_voiding_a_vote_of_a_superseded_coverage_round_does_not_reopen_it(connected, dataset, concept):
    from consensus.models import Vote
    from consensus.voiding import votes_void

    with_table(concept)
    with_table(concept, QuestionKind.BOX_COVERAGE)
    boxes.box_job_start(image=image(dataset), concept=concept)
    first, second, *voters = workers(14)
    answer(first, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    vote_until_decided(voters, True)
    vote_until_decided(voters, False)  # round 1: no
    answer(second, boxes.DRAW_KIND, {"box": [200, 200, 300, 300]})
    vote_until_decided(voters, True)  # round 2 is now open
    round_1 = Question.objects.get(kind=QuestionKind.BOX_COVERAGE, round=1)
    votes_void(votes=Vote.objects.filter(question=round_1).values_list("pk", flat=True)[:1], reason="test")
    round_1.refresh_from_db()
    assert round_1.state == QuestionState.REJECTED
    assert Question.objects.get(kind=QuestionKind.BOX_COVERAGE, round=2).state == QuestionState.OPEN


def test_a_finished_job_whose_coverage_yes_is_voided_away_and_becomes_no_draws_again(
    connected, dataset, concept
):
    """Three unreliable voters finish the job with "every instance is boxed"; their votes are voided, the
    question reopens and honest voters say "no": the job takes the revised verdict and queues a draw."""
    from consensus.models import Vote
    from consensus.voiding import votes_void

    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    drawer, *voters = workers(10)
    spammers, honest = voters[:3], voters[3:]
    answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    vote_until_decided(honest, True)  # quality: accepted
    vote_until_decided(spammers, True)  # coverage round 1: a wrong "yes"
    assert BoxJob.objects.get(pk=job.pk).status == "done"
    coverage = Question.objects.get(kind=QuestionKind.BOX_COVERAGE)
    spam = Vote.objects.filter(question=coverage, worker__in=spammers).values_list("pk", flat=True)
    votes_void(votes=list(spam), reason="blocked")
    vote_until_decided(honest, False)
    coverage.refresh_from_db()
    assert coverage.state == QuestionState.REJECTED
    assert BoxJob.objects.get(pk=job.pk).status == "needs_draw"
    assert Task.objects.filter(kind=boxes.DRAW_KIND, state="open").count() == 1


def test_voiding_the_no_of_a_coverage_round_the_job_acted_on_does_not_reopen_it(connected, dataset, concept):
    """Round 1's "no" sent the job to draw again. Voiding those votes before round 2 exists must not reopen round
    1: the job acted on it, and the next accepted box asks round 2, which the database allows only while no other
    round is undecided (the soak's IntegrityError on submit)."""
    from consensus.models import Vote
    from consensus.voiding import votes_void

    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    first, second, *voters = workers(14)
    spammers, honest = voters[:3], voters[3:]
    answer(first, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    vote_until_decided(honest, True)  # quality: accepted
    vote_until_decided(spammers, False)  # coverage round 1: a wrong "no"
    round_1 = Question.objects.get(kind=QuestionKind.BOX_COVERAGE, round=1)
    assert round_1.state == QuestionState.REJECTED
    answer(second, boxes.DRAW_KIND, {"box": [200, 200, 300, 300]})  # the draw the "no" asked for
    spam = Vote.objects.filter(question=round_1, worker__in=spammers).values_list("pk", flat=True)
    report = votes_void(votes=list(spam), reason="blocked")
    round_1.refresh_from_db()
    assert round_1.state == QuestionState.REJECTED
    assert round_1.pk in report.recounted
    vote_until_decided(honest, True)  # quality of the second box: round 2 opens
    assert Question.objects.get(kind=QuestionKind.BOX_COVERAGE, round=2).state == QuestionState.OPEN
    assert BoxJob.objects.get(pk=job.pk).status == "awaiting_coverage"


def test_a_revised_verdict_of_a_superseded_coverage_round_does_not_move_the_job(connected, dataset, concept):
    """Round 1 said "no" and round 2 is open; voiding round 1's "no" votes turns it into a "yes". That verdict is
    about boxes the job has moved past, so round 2 stays the job's open question."""
    from consensus.models import Vote
    from consensus.voiding import votes_void

    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    first, second, *voters = workers(14)
    answer(first, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    vote_until_decided(voters, True)  # quality: accepted
    yes_voters, no_voters = voters[:2], voters[2:]
    for voter in yes_voters:  # round 1: 2 yes, then "no" until rejected
        assert answer(voter, "question", {"answer": True}).state == "open"
    vote_until_decided(no_voters, False)
    round_1 = Question.objects.get(kind=QuestionKind.BOX_COVERAGE, round=1)
    assert round_1.state == QuestionState.REJECTED
    answer(second, boxes.DRAW_KIND, {"box": [200, 200, 300, 300]})
    vote_until_decided(voters, True)  # quality of the second box: round 2 opens
    answer(voters[-1], "question", {"answer": True})  # one yes for round 2
    extra_yes = next(v for v in voters if not Vote.objects.filter(question=round_1, worker=v).exists())
    with transaction.atomic():
        Vote.objects.create(question=round_1, worker=extra_yes, answer=True)
        Question.objects.filter(pk=round_1.pk).update(yes_count=3)
    votes_void(
        votes=list(Vote.objects.filter(question=round_1, answer=False).values_list("pk", flat=True)),
        reason="blocked",
    )
    round_1.refresh_from_db()
    assert round_1.state == QuestionState.ACCEPTED  # revised
    assert BoxJob.objects.get(pk=job.pk).status == "awaiting_coverage"
    assert Question.objects.get(kind=QuestionKind.BOX_COVERAGE, round=2).state == QuestionState.OPEN


def _coverage_record(dataset, concept, always_yes, honest, n_questions=30):
    """Decided coverage questions of other images: the always-yes voters said "yes" to every one, the honest
    voters told the truth (every other one had an instance left unboxed)."""
    from consensus.models import Vote

    for i in range(n_questions):
        covered = i % 2 == 0
        question = Question.objects.create(
            kind=QuestionKind.BOX_COVERAGE,
            dataset=dataset,
            concept=concept,
            image=image(dataset),
            round=1,
            state=QuestionState.ACCEPTED if covered else QuestionState.REJECTED,
        )
        votes = [(w, True) for w in always_yes] + [(w, covered) for w in honest]
        Vote.objects.bulk_create(Vote(question=question, worker=w, answer=a) for w, a in votes)
        Question.objects.filter(pk=question.pk).update(
            yes_count=sum(a for _, a in votes), no_count=sum(not a for _, a in votes)
        )


def test_always_yes_voters_with_a_record_cannot_finish_a_job_on_their_own(connected, dataset, concept):
    """Three voters who said "yes" to every coverage question, right or wrong, answer "yes": under the prior
    table that was enough to finish the job with instances unboxed; weighed by their record it says nothing,
    and the honest voters' "no" queues another draw."""
    drawer, *voters = workers(11)
    always_yes, honest = voters[:3], voters[3:]
    _coverage_record(dataset, concept, always_yes, honest)
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    vote_until_decided(honest, True)  # quality: accepted
    for voter in always_yes:
        answer(voter, "question", {"answer": True})
    assert BoxJob.objects.get(pk=job.pk).status == "awaiting_coverage"
    vote_until_decided(honest, False)
    assert BoxJob.objects.get(pk=job.pk).status == "needs_draw"
