"""Questions nobody left can answer (issue 13, the starved-question stall): an open question whose task no worker
of the dataset's crowd can take any more (all voted, blocked, barred) is settled with the votes it has or sent to
review by the sweep, never left open for good; a question someone can still answer, or one touched recently, is
left alone."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.utils import timezone

from annotation import queue
from annotation.models import Task
from consensus import starved
from consensus.creation import Target, questions_create
from consensus.models import Question, QuestionKind, QuestionState
from gold.services import worker_block_set
from review import stuck
from review.models import ItemState, ReviewItem
from tests import factories
from tests.annotation.boxhelpers import answer
from tests.consensus.conftest import make_images, make_workers, small_settings

pytestmark = pytest.mark.django_db


@pytest.fixture
def split_question(dataset, concept):
    """One verification question with 2 yes / 1 no from a crowd of three (the assumed table cannot decide it,
    the cap is 8): every worker of the dataset has voted."""
    small_settings(dataset, calibration_votes=3)
    [img] = make_images(dataset, 1)
    [question] = questions_create(
        dataset=dataset, kind=QuestionKind.IMAGE_VERIFY, concept=concept, targets=[Target(image=img)]
    )
    crowd = make_workers(3)
    for worker, vote in zip(crowd, (True, True, False), strict=True):
        answer(worker, "question", {"answer": vote})
    question.refresh_from_db()
    assert question.state == QuestionState.OPEN and question.n_votes == 3
    return question


def test_a_question_every_worker_of_the_crowd_has_voted_on_is_sent_to_review_with_its_image(split_question):
    assert [q.pk for q in starved.questions_starved(idle_seconds=0)] == [split_question.pk]
    report = starved.starved_settle(idle_seconds=0)
    assert report.settled == {"review": 1}
    split_question.refresh_from_db()
    assert split_question.state == QuestionState.REVIEW
    item = ReviewItem.objects.get(state=ItemState.OPEN)
    assert item.subject == {"type": "consensus.question", "id": split_question.pk}
    assert item.image_id == split_question.image_id
    assert Task.objects.get(pk=split_question.task_id).state == "done"
    assert starved.starved_settle(idle_seconds=0).total == 0, "settled once"


def test_a_question_someone_can_still_answer_is_left_open_until_that_worker_is_blocked(
    split_question, dataset, organizer
):
    newcomer = make_workers(1, prefix="late")[0]
    # The newcomer has worked in the dataset (a task of another question), so they are part of its crowd.
    other = factories.ImageFactory(dataset=dataset)
    questions_create(
        dataset=dataset,
        kind=QuestionKind.IMAGE_VERIFY,
        concept=split_question.concept,
        targets=[Target(image=other)],
    )
    Task.objects.filter(pk=split_question.task_id).update(priority=-1)  # the newcomer answers the other one
    answer(newcomer, "question", {"answer": True})
    assert split_question.pk not in {q.pk for q in starved.questions_starved(idle_seconds=0)}
    worker_block_set(worker=newcomer, dataset_id=dataset.pk, blocked=True, reason="test", actor=organizer)
    assert split_question.pk in {q.pk for q in starved.questions_starved(idle_seconds=0)}


def _participant_answers_one_question(dataset, split_question, participant: str):
    """A study-link participant (a session of one task) answers another question of the dataset, so they are
    part of its crowd; returns their bundle after that answer."""
    from crowd.models import BundleSize, StudyLink
    from crowd.providers import base, external_link

    other = factories.ImageFactory(dataset=dataset)
    questions_create(
        dataset=dataset,
        kind=QuestionKind.IMAGE_VERIFY,
        concept=split_question.concept,
        targets=[Target(image=other)],
    )
    # The participant answers the other one.
    Task.objects.filter(pk=split_question.task_id).update(priority=-1)
    BundleSize.objects.create(dataset=dataset, kind="question", size=1)
    study = StudyLink.objects.get_or_create(dataset=dataset, kind="question")[0]
    bundle = external_link.study_session_start(study=study, participant=participant)
    step = base.bundle_next(bundle)
    assert step.assignment.task_id != split_question.task_id
    return base.bundle_submit(
        bundle, assignment_id=step.assignment.pk, answer={"answer": True}, idempotency_key=f"{participant}-1"
    ).bundle


def test_a_study_participant_whose_session_is_over_is_no_voter_the_sweep_waits_for(split_question, dataset):
    """Issue 34: `review_stuck --starved-after 0` settled none of a small crowd's questions, because finished
    study-link participants still counted as workers who could take them (they never can: a participant
    works only inside their session, and a finished one does not get another)."""
    bundle = _participant_answers_one_question(dataset, split_question, "P1")
    assert bundle.state == "complete"
    assert [q.pk for q in starved.questions_starved(idle_seconds=0)] == [split_question.pk]
    report = stuck.stuck_enqueue(dataset_id=dataset.pk, starved_after=0)
    assert report.starved_settled == {"review": 1}


def test_a_study_participant_in_an_open_session_can_still_answer_so_the_question_waits(
    split_question, dataset
):
    from crowd.models import Bundle, BundleSize

    bundle = _participant_answers_one_question(dataset, split_question, "P2")
    # A longer session: the participant may still be given the question.
    BundleSize.objects.filter(dataset=dataset).update(size=5)
    Bundle.objects.filter(pk=bundle.pk).update(state="open", size=5)
    assert split_question.pk not in {q.pk for q in starved.questions_starved(idle_seconds=0)}


def test_a_study_participant_whose_open_session_is_of_another_kind_is_no_voter_the_sweep_waits_for(
    split_question, dataset
):
    """A session leases its own task kind only (`bundle_next`), so a participant answering binary votes in an
    open session can never be given the question: the lease and the sweep now say so with one condition (the
    study policy's `only_kinds`); before, the sweep counted them as a voter and the question stayed open."""
    from crowd.models import Bundle, StudyLink
    from crowd.providers import external_link

    _participant_answers_one_question(dataset, split_question, "P3")
    votes = StudyLink.objects.create(dataset=dataset, kind="binary_vote")
    bundle = external_link.study_session_start(study=votes, participant="P3")
    assert Bundle.objects.get(pk=bundle.pk).state == "open"
    participant = bundle.worker
    assert (
        not queue.available_tasks(worker=participant, dataset_id=dataset.pk)
        .filter(pk=split_question.task_id)
        .exists()
    ), "the queue hands a binary-vote session no question task"
    assert [q.pk for q in starved.questions_starved(idle_seconds=0)] == [split_question.pk]
    assert stuck.stuck_enqueue(dataset_id=dataset.pk, starved_after=0).starved_settled == {"review": 1}


def test_a_question_touched_recently_is_not_swept(split_question):
    assert starved.questions_starved() == [], "900 s by default: a crowd that is offline may come back"
    Task.objects.filter(pk=split_question.task_id).update(
        updated_at=timezone.now() - timezone.timedelta(hours=1)
    )
    assert [q.pk for q in starved.questions_starved()] == [split_question.pk]


def test_the_review_sweep_and_its_command_settle_starved_questions(split_question, dataset):
    report = stuck.stuck_enqueue(dataset_id=dataset.pk, starved_after=0)
    assert report.starved_settled == {"review": 1}
    out = io.StringIO()
    call_command("review_stuck", "--starved-after", "0", stdout=out)
    assert "starved questions settled: none" in out.getvalue()


def test_the_command_names_a_bad_dataset_or_wait():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        call_command("review_stuck", "--dataset", "nope", stdout=io.StringIO())
    with pytest.raises(CommandError, match="seconds"):
        call_command("review_stuck", "--starved-after", "-1", stdout=io.StringIO())


def test_a_calibration_batch_that_lost_a_starved_question_releases_its_paused_and_waiting_questions(
    dataset, concept, organizer
):
    """The other half of "nobody can answer": a batch of 4 calibration questions, three with their votes
    (paused until the table) and one that nobody left can answer, plus a production question waiting for the
    table. Settling the starved one used to leave the rest held for good: open, but with no task in the queue,
    so every lease came back empty while the server's sweep saw nothing to settle. Now the sweep serves the
    waiting question and decides (or asks on) the paused ones."""
    small_settings(dataset, calibration_votes=3)
    images = make_images(dataset, 5)
    created = questions_create(
        dataset=dataset,
        kind=QuestionKind.IMAGE_VERIFY,
        concept=concept,
        targets=[Target(image=img) for img in images],
    )
    assert [q.state for q in created] == [QuestionState.OPEN] * 4 + [QuestionState.WAITING]
    a, b, c = make_workers(3)
    for worker, n in ((a, 4), (b, 4), (c, 3)):
        for _ in range(n):
            answer(worker, "question", {"answer": True})
    worker_block_set(worker=c, dataset_id=dataset.pk, blocked=True, reason="test", actor=organizer)
    short = Question.objects.get(pk=created[3].pk)
    assert short.state == QuestionState.OPEN and short.n_votes == 2
    paused = Question.objects.filter(pk__in=[q.pk for q in created[:3]])
    assert {(q.state, q.task.state) for q in paused} == {(QuestionState.OPEN, "done")}

    report = stuck.stuck_enqueue(dataset_id=dataset.pk, starved_after=0)
    assert sum(report.starved_settled.values()) == 1 and report.table_waits_ended == 4
    assert not Question.objects.filter(state=QuestionState.WAITING).exists()
    held = Question.objects.filter(state=QuestionState.OPEN, task__state="done")
    assert not held.exists(), "no open question is left without a task in the queue"
    served = Question.objects.get(pk=created[4].pk)
    assert served.state == QuestionState.OPEN and served.task.state == "open"
    assert queue.task_lease_next(worker=a, dataset_id=dataset.pk) is not None, "the crowd has work again"
