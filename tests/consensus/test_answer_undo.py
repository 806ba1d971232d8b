"""A worker takes back their last answer within the undo window (issue 17): the vote stops counting, the task is
leased to them again, the decision is the one the other votes make, and the undo is refused (409) once the
question is decided, the window passed or another worker holds the task; a retry changes nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import queue
from annotation.models import Assignment, AssignmentState, Task, TaskState
from consensus import verification
from consensus.binary_vote import vote_tasks_create
from consensus.models import (
    CalibrationTable,
    ConsensusSettings,
    Question,
    QuestionDecision,
    QuestionRole,
    QuestionState,
    Vote,
)
from tests import factories
from tests.conftest import leased_task
from tests.hierarchy.conftest import tiny_hierarchy  # noqa: F401  (a fixture, used by name)

from .conftest import make_images, make_workers

pytestmark = pytest.mark.django_db(transaction=True)  # the table is built after commit

SETTINGS = dict(calibration_min=4, calibration_max=4, calibration_votes=5, vote_cap=8, estimator="dynamic")


@pytest.fixture
def calibrated(dataset, concept):
    """A confidence table for the concept, built from a dataset's 4 calibration questions (5 votes each)."""
    ConsensusSettings.objects.create(dataset=dataset, **SETTINGS)
    make_images(dataset, 4)
    verification.verification_queue(dataset=dataset, concept=concept)
    for w in make_workers(5, prefix="cal"):
        for _ in range(4):
            a = queue.task_lease_next(worker=w, dataset_id=dataset.pk)
            answer = {"answer": a.task.question.image_id % 2 == 0}
            queue.assignment_submit(assignment=a, answer=answer, idempotency_key=f"k{a.pk}")
    assert CalibrationTable.objects.exists()
    return dataset


def one_question(organizer, concept) -> Question:
    """A fresh dataset with one production question of the calibrated concept."""
    ds = factories.DatasetFactory(organizers=[organizer])
    ConsensusSettings.objects.create(dataset=ds, **SETTINGS)
    make_images(ds, 1)
    verification.verification_queue(dataset=ds, concept=concept)
    question = Question.objects.get(dataset=ds)
    assert question.role == QuestionRole.PRODUCTION and question.task_id is not None
    return question


def answer(worker, question: Question, value: bool) -> Assignment:
    lease = queue.task_lease_next(worker=worker, dataset_id=question.dataset_id)
    assert lease is not None and lease.task_id == question.task_id
    queue.assignment_submit(assignment=lease, answer={"answer": value}, idempotency_key=f"k{lease.pk}")
    return lease


def undo(api_client, worker, assignment_id: int):
    return api_client(worker.user).post(f"/api/v1/assignments/{assignment_id}/undo/")


def test_undo_takes_the_vote_out_of_the_tally_and_leases_the_task_back(
    calibrated, organizer, concept, api_client
):
    question = one_question(organizer, concept)
    first, mistaken = make_workers(2, prefix="u")
    answer(first, question, True)
    wrong = answer(mistaken, question, True)
    response = undo(api_client, mistaken, wrong.pk)
    assert response.status_code == 201, response.content
    lease = response.json()
    assert (
        lease["id"] != wrong.pk and leased_task(lease).pk == question.task_id and lease["state"] == "leased"
    )
    assert "question" in lease["task"]["payload"]  # handed out like any lease (tasks/next)
    question.refresh_from_db()
    assert (question.yes_count, question.no_count, question.state) == (1, 0, QuestionState.OPEN)
    task = Task.objects.get(pk=question.task_id)
    assert (task.state, task.answers_count) == (TaskState.LEASED, 1)
    withdrawn = Assignment.objects.get(pk=wrong.pk)
    assert withdrawn.state == AssignmentState.WITHDRAWN and withdrawn.answer == {"answer": True}  # kept
    vote = Vote.objects.get(assignment_id=wrong.pk)
    assert vote.withdrawn and vote.void.reason == "taken back by its worker"
    # The worker answers again, on the new lease: a new vote, counted once.
    redo = queue.assignment_submit(assignment=lease["id"], answer={"answer": False}, idempotency_key="again")
    assert redo.assignment.state == AssignmentState.SUBMITTED
    question.refresh_from_db()
    assert (question.yes_count, question.no_count) == (1, 1)
    assert Vote.objects.filter(question=question, worker=mistaken, void__isnull=True).count() == 1


def test_an_undone_answer_leaves_the_cost_counters_equal_to_a_recount(
    calibrated, organizer, concept, api_client
):
    """The cost ledger counts answers and worker time as they are given: a withdrawn one is taken out again."""
    from annotation.counters import counters_expected, counters_stored

    question = one_question(organizer, concept)
    first, mistaken = make_workers(2, prefix="c")
    answer(first, question, True)
    wrong = answer(mistaken, question, True)
    assert undo(api_client, mistaken, wrong.pk).status_code == 201
    # The usage part: this test's images are made by a test helper, not through ingestion's counted writer.
    assert counters_stored(question.dataset_id)[1] == counters_expected(question.dataset_id)[1]


def test_the_decision_after_an_undo_equals_the_decision_without_the_withdrawn_vote(
    calibrated, organizer, concept, api_client
):
    with_undo, without = one_question(organizer, concept), one_question(organizer, concept)
    crowd = make_workers(9, prefix="d")
    taker = crowd[1]
    answer(crowd[0], with_undo, False)
    answer(crowd[0], without, False)
    wrong = answer(taker, with_undo, True)
    assert undo(api_client, taker, wrong.pk).status_code == 201
    queue.assignment_release(assignment=Assignment.objects.get(worker=taker, state=AssignmentState.LEASED))
    for w in crowd[2:]:
        for q in (with_undo, without):
            q.refresh_from_db()
            if q.state == QuestionState.OPEN:
                answer(w, q, False)
    with_undo.refresh_from_db()
    without.refresh_from_db()
    assert without.state != QuestionState.OPEN  # the other votes decide it
    fields = ("state", "p", "yes_count", "no_count")
    assert [getattr(with_undo, f) for f in fields] == [getattr(without, f) for f in fields]
    decisions = [
        list(QuestionDecision.objects.filter(question=q).values_list("decision", "yes_count", "no_count"))
        for q in (with_undo, without)
    ]
    assert decisions[0] == decisions[1]


def test_an_undo_retried_returns_the_same_lease_and_changes_nothing(
    calibrated, organizer, concept, api_client
):
    question = one_question(organizer, concept)
    (w,) = make_workers(1, prefix="r")
    wrong = answer(w, question, True)
    first = undo(api_client, w, wrong.pk)
    again = undo(api_client, w, wrong.pk)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert Assignment.objects.filter(task_id=question.task_id, worker=w).count() == 2
    question.refresh_from_db()
    assert (question.yes_count, question.no_count) == (0, 0)


def test_undo_is_refused_once_the_window_passed(calibrated, organizer, concept, api_client, settings):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "ANSWER_UNDO_SECONDS": 10}
    question = one_question(organizer, concept)
    (w,) = make_workers(1, prefix="t")
    wrong = answer(w, question, True)
    Assignment.objects.filter(pk=wrong.pk).update(submitted_at=timezone.now() - timedelta(seconds=11))
    response = undo(api_client, w, wrong.pk)
    assert response.status_code == 409
    assert "within 10 seconds" in response.json()["detail"]
    question.refresh_from_db()
    assert question.yes_count == 1 and Assignment.objects.get(pk=wrong.pk).state == AssignmentState.SUBMITTED


def test_undo_is_refused_once_the_question_is_decided(calibrated, organizer, concept, api_client):
    question = one_question(organizer, concept)
    crowd = make_workers(9, prefix="x")
    last = None
    for w in crowd:
        question.refresh_from_db()
        if question.state != QuestionState.OPEN:
            break
        last = (w, answer(w, question, False))
    question.refresh_from_db()
    assert question.state != QuestionState.OPEN
    decided = (question.state, question.yes_count, question.no_count)
    response = undo(api_client, last[0], last[1].pk)
    assert response.status_code == 409 and "decided" in response.json()["detail"]
    question.refresh_from_db()
    assert (question.state, question.yes_count, question.no_count) == decided
    assert not Vote.objects.filter(question=question, withdrawn=True).exists()


def test_undo_is_refused_while_another_worker_holds_the_task(calibrated, organizer, concept, api_client):
    question = one_question(organizer, concept)
    mine, theirs = make_workers(2, prefix="o")
    wrong = answer(mine, question, True)
    assert queue.task_lease_next(worker=theirs, dataset_id=question.dataset_id).task_id == question.task_id
    response = undo(api_client, mine, wrong.pk)
    assert response.status_code == 409 and "another worker" in response.json()["detail"]
    question.refresh_from_db()
    assert question.yes_count == 1


def test_another_workers_assignment_cannot_be_undone_and_looks_like_none(
    calibrated, organizer, concept, api_client
):
    question = one_question(organizer, concept)
    mine, theirs = make_workers(2, prefix="n")
    wrong = answer(mine, question, True)
    assert undo(api_client, theirs, wrong.pk).status_code == 404
    assert undo(api_client, theirs, 10**9).status_code == 404
    assert Assignment.objects.get(pk=wrong.pk).state == AssignmentState.SUBMITTED


def test_a_fixed_majority_vote_undone_leaves_its_tally_and_a_closed_one_keeps_it(
    dataset, concept, api_client
):
    vote_tasks_create(dataset=dataset, concept=concept, images=make_images(dataset, 1), answers_wanted=3)
    a, b, c = make_workers(3, prefix="m")
    first = answer_task(a, dataset, True)
    assert undo(api_client, a, first.pk).status_code == 201
    task = Task.objects.get(dataset=dataset)
    assert task.result == {"yes": 0, "no": 0} and task.answers_count == 0
    redo = Assignment.objects.get(worker=a, state=AssignmentState.LEASED)
    queue.assignment_submit(assignment=redo, answer={"answer": False}, idempotency_key="redo")
    answer_task(b, dataset, False)
    task.refresh_from_db()
    assert task.state == TaskState.DONE and task.result["answer"] is False  # 2 of 3 said no
    closing = Assignment.objects.get(worker=b)
    assert undo(api_client, b, closing.pk).status_code == 409
    assert Task.objects.get(pk=task.pk).result == task.result


def answer_task(worker, dataset, value: bool) -> Assignment:
    lease = queue.task_lease_next(worker=worker, dataset_id=dataset.pk)
    queue.assignment_submit(assignment=lease, answer={"answer": value}, idempotency_key=f"k{lease.pk}")
    return lease


def test_a_hierarchy_question_answer_undone_no_longer_counts_when_the_next_answer_decides(
    api_client,
    organizer,
    dataset,
    tiny_hierarchy,  # noqa: F811  (the fixture imported above)
):
    factories.ImageFactory(dataset=dataset)
    body = {"hierarchy": tiny_hierarchy.pk, "engine": "vote"}
    assert api_client(organizer).post(f"/api/v1/datasets/{dataset.pk}/multilabel/", body).status_code == 201
    (w,) = make_workers(1, prefix="h")
    lease = queue.task_lease_next(worker=w, kinds_wanted=["hierarchy_question"])
    queue.assignment_submit(assignment=lease, answer={"answer": True}, idempotency_key="h1")
    assert undo(api_client, w, lease.pk).status_code == 201
    task = Task.objects.get(pk=lease.task_id)
    assert (task.state, task.answers_count) == (TaskState.LEASED, 0)
    again = Assignment.objects.get(worker=w, state=AssignmentState.LEASED)
    queue.assignment_submit(assignment=again, answer={"answer": False}, idempotency_key="h2")
    task.refresh_from_db()
    # Only the new "no" is counted: the kind recounts the submitted answers, and the withdrawn one is not.
    counted = Assignment.objects.filter(task=task, state=AssignmentState.SUBMITTED)
    assert list(counted.values_list("answer", flat=True)) == [{"answer": False}]
    assert task.answers_count == 1
