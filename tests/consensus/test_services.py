"""The consensus services on the database: calibration first, production held until the table exists, votes
recorded once, decisions appended, events announced."""

from __future__ import annotations

import pytest

from annotation import queue
from annotation.models import Box, Task, TaskState
from consensus import creation, engine, events, rebuild, verification
from consensus.models import (
    CalibrationTable,
    Question,
    QuestionDecision,
    QuestionKind,
    QuestionRole,
    QuestionState,
    Vote,
)
from tests import factories

from .conftest import make_images, make_workers, small_settings

# on_commit callbacks (the calibration rebuild) only run when the test's transactions really commit.
pytestmark = pytest.mark.django_db(transaction=True)


def vote_through_queue(worker, answer: bool):
    assignment = queue.task_lease_next(worker=worker, kinds_wanted=[creation.TASK_KIND])
    assert assignment is not None
    queue.assignment_submit(
        assignment=assignment, answer={"answer": answer}, idempotency_key=f"k{assignment.pk}"
    )
    return assignment


def test_verification_queue_picks_a_seeded_calibration_subset_and_holds_production(dataset, concept):
    small_settings(dataset)
    make_images(dataset, 12)
    plan = verification.verification_queue(dataset=dataset, concept=concept)
    assert (plan.created, plan.calibration, plan.waiting, plan.table_reused) == (12, 4, 8, False)
    cal = Question.objects.filter(role=QuestionRole.CALIBRATION)
    assert all(q.task_id and q.state == QuestionState.OPEN and q.min_votes == 5 for q in cal)
    assert Question.objects.filter(state=QuestionState.WAITING, task__isnull=True).count() == 8
    assert Task.objects.filter(kind="question").count() == 4
    again = verification.verification_queue(dataset=dataset, concept=concept)
    assert again.created == 0, "queuing twice asks nothing twice"


def test_default_calibration_size_is_ten_percent_clamped_to_twenty_and_a_hundred(dataset, concept):
    make_images(dataset, 50)
    plan = verification.verification_queue(dataset=dataset, concept=concept)
    assert plan.calibration == 20


def test_calibration_completes_builds_a_table_and_serves_waiting_questions(dataset, concept):
    small_settings(dataset)
    make_images(dataset, 10)
    verification.verification_queue(dataset=dataset, concept=concept)
    workers = make_workers(5)
    # Every calibration image gets 5 votes: images alternate clear yes / clear no.
    for w in workers:
        for _ in range(4):
            a = queue.task_lease_next(worker=w, kinds_wanted=[creation.TASK_KIND])
            truth = a.task.question.image_id % 2 == 0
            queue.assignment_submit(assignment=a, answer={"answer": truth}, idempotency_key=f"k{a.pk}")
    table = CalibrationTable.objects.get()
    assert (table.n_images, table.n_votes, table.kind) == (4, 20, QuestionKind.IMAGE_VERIFY)
    assert not Question.objects.filter(state=QuestionState.WAITING).exists()
    production = Question.objects.filter(role=QuestionRole.PRODUCTION)
    assert production.count() == 6 and all(q.task_id for q in production)
    # The unanimous calibration questions are decided by the table, with a decision row each.
    cal = Question.objects.filter(role=QuestionRole.CALIBRATION)
    for q in cal:
        assert q.state in (QuestionState.ACCEPTED, QuestionState.REJECTED, QuestionState.OPEN)
    assert QuestionDecision.objects.count() == cal.exclude(state=QuestionState.OPEN).count()
    # Rebuilding with the same votes is idempotent.
    rebuild.calibration_rebuild(kind=QuestionKind.IMAGE_VERIFY, concept_id=concept.pk)
    assert CalibrationTable.objects.count() == 1


def test_a_concept_with_a_table_skips_calibration_in_another_dataset(organizer, concept):
    first = factories.DatasetFactory(organizers=[organizer])
    small_settings(first)
    make_images(first, 6)
    verification.verification_queue(dataset=first, concept=concept)
    for w in make_workers(5):
        for _ in range(4):
            vote_through_queue(w, True)
    assert CalibrationTable.objects.count() == 1
    second = factories.DatasetFactory(organizers=[organizer])
    small_settings(second)  # a table from 4 images is enough only for a dataset that asks for 4
    make_images(second, 30)
    plan = verification.verification_queue(dataset=second, concept=concept)
    assert (plan.calibration, plan.waiting, plan.table_reused) == (0, 0, True)
    assert Question.objects.filter(dataset=second, task__isnull=False).count() == 30


def test_production_vote_runs_the_stopping_rule_and_announces_the_decision(dataset, concept):
    small_settings(dataset, calibration_min=6, calibration_max=6)
    make_images(dataset, 8)
    verification.verification_queue(dataset=dataset, concept=concept)
    workers = make_workers(8)
    for w in workers[:5]:
        for _ in range(6):
            a = queue.task_lease_next(worker=w, kinds_wanted=[creation.TASK_KIND])
            yes = a.task.question.image_id % 3 != 0
            queue.assignment_submit(assignment=a, answer={"answer": yes}, idempotency_key=f"k{a.pk}")
    seen = []
    events.subscribe(QuestionKind.IMAGE_VERIFY, seen.append)
    try:
        question = Question.objects.filter(role=QuestionRole.PRODUCTION).first()
        for w in workers:
            if question.state != QuestionState.OPEN:
                break
            question = engine.vote_record(question=question, worker=w, answer=True)
    finally:
        events.unsubscribe(QuestionKind.IMAGE_VERIFY, seen.append)
    question.refresh_from_db()
    assert question.state == QuestionState.ACCEPTED
    assert question.p >= 0.997
    assert question.yes_count == Vote.objects.filter(question=question).count()
    assert Task.objects.get(pk=question.task_id).state == TaskState.DONE
    assert [e.question.pk for e in seen] == [question.pk]
    decision = QuestionDecision.objects.get(question=question)
    assert decision.table_id == CalibrationTable.objects.get().pk and decision.decision == "accept"


def test_second_vote_by_the_same_worker_is_refused(dataset, concept):
    small_settings(dataset)
    make_images(dataset, 4)
    verification.verification_queue(dataset=dataset, concept=concept)
    worker = make_workers(1)[0]
    question = Question.objects.filter(role=QuestionRole.CALIBRATION).first()
    engine.vote_record(question=question, worker=worker, answer=True)
    with pytest.raises(engine.AlreadyVoted):
        engine.vote_record(question=question, worker=worker, answer=False)
    question.refresh_from_db()
    assert (question.yes_count, question.no_count) == (1, 0)
    assert Vote.objects.count() == 1


def test_a_decided_or_waiting_question_takes_no_more_votes(dataset, concept):
    small_settings(dataset)
    make_images(dataset, 6)
    verification.verification_queue(dataset=dataset, concept=concept)
    worker = make_workers(1)[0]
    waiting = Question.objects.filter(state=QuestionState.WAITING).first()
    with pytest.raises(engine.QuestionClosed):
        engine.vote_record(question=waiting, worker=worker, answer=True)
    decided = Question.objects.filter(role=QuestionRole.CALIBRATION).first()
    Question.objects.filter(pk=decided.pk).update(state=QuestionState.REJECTED)
    with pytest.raises(engine.QuestionClosed):
        engine.vote_record(question=decided, worker=worker, answer=True)
    assert not Vote.objects.exists()


def test_weighted_estimator_decides_from_worker_reliability(dataset, concept):
    small_settings(dataset, estimator="weighted", calibration_min=6, calibration_max=6)
    make_images(dataset, 8)
    verification.verification_queue(dataset=dataset, concept=concept)
    workers = make_workers(6)
    for w in workers[:5]:
        for _ in range(6):
            a = queue.task_lease_next(worker=w, kinds_wanted=[creation.TASK_KIND])
            yes = a.task.question.image_id % 2 == 0
            queue.assignment_submit(assignment=a, answer={"answer": yes}, idempotency_key=f"k{a.pk}")
    question = Question.objects.filter(role=QuestionRole.PRODUCTION).first()
    for w in workers:
        question = engine.vote_record(question=question, worker=w, answer=False)
        if question.state != QuestionState.OPEN:
            break
    assert question.state == QuestionState.REJECTED
    assert QuestionDecision.objects.get(question=question).estimator == "weighted"


def test_box_questions_without_a_table_calibrate_first_then_wait(dataset, concept):
    small_settings(dataset, calibration_min=2)
    image = make_images(dataset, 1)[0]
    boxes = [Box.objects.create(image=image, concept=concept, x1=0, y1=0, x2=10 + i, y2=10) for i in range(3)]
    qs = creation.questions_create(
        dataset=dataset,
        kind=QuestionKind.BOX_QUALITY,
        concept=concept,
        targets=[creation.Target(image=image, box=b) for b in boxes],
    )
    assert [q.role for q in qs] == ["calibration", "calibration", "production"]
    assert [q.state for q in qs] == ["open", "open", "waiting"]
    assert Task.objects.get(pk=qs[0].task_id).payload["question"].startswith("Is this box tight")
