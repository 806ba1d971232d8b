"""Votes under real concurrency on PostgreSQL: simultaneous votes on one question never lose an update, and a
worker's simultaneous duplicate votes are stored once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from consensus import creation, engine, verification
from consensus import rebuild as tables
from consensus.models import ConsensusSettings, Question, QuestionRole, Vote
from tests.threads import a_lock_is_awaited, in_thread
from tests.waiting import GENEROUS_SECONDS

from .conftest import make_images, make_workers

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

THREADS = 12


@pytest.fixture
def calibration_question(dataset, concept):
    # One calibration question wanting more votes than the threads cast, so every vote is accepted.
    ConsensusSettings.objects.create(
        dataset=dataset, calibration_min=1, calibration_max=1, calibration_votes=20, vote_cap=20
    )
    make_images(dataset, 1)
    verification.verification_queue(dataset=dataset, concept=concept)
    return Question.objects.get(role=QuestionRole.CALIBRATION)


def test_simultaneous_votes_on_one_question_are_all_counted(calibration_question):
    workers = make_workers(THREADS)
    barrier = threading.Barrier(THREADS)

    @in_thread
    def vote(i: int) -> None:
        barrier.wait()
        engine.vote_record(question=calibration_question, worker=workers[i], answer=i % 3 != 0)

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(vote, range(THREADS)))
    q = Question.objects.get(pk=calibration_question.pk)
    votes = Vote.objects.filter(question=q)
    assert q.yes_count == votes.filter(answer=True).count() == 8
    assert q.no_count == votes.filter(answer=False).count() == 4
    assert connection.vendor == "postgresql"


def test_simultaneous_duplicate_votes_of_one_worker_store_one(calibration_question):
    worker = make_workers(1)[0]
    barrier = threading.Barrier(6)

    @in_thread
    def vote(_: int) -> str:
        barrier.wait()
        try:
            engine.vote_record(question=calibration_question, worker=worker, answer=True)
            return "stored"
        except engine.AlreadyVoted:
            return "refused"

    with ThreadPoolExecutor(6) as pool:
        outcomes = sorted(pool.map(vote, range(6)))
    assert outcomes == ["refused"] * 5 + ["stored"]
    q = Question.objects.get(pk=calibration_question.pk)
    assert (q.yes_count, q.no_count) == (1, 0) and Vote.objects.count() == 1


def test_a_question_created_while_its_table_is_being_built_is_served(dataset, concept, monkeypatch):
    # Cause 2 of issue 13: a question created while the rebuild's transaction was open stayed waiting forever.
    ConsensusSettings.objects.create(
        dataset=dataset, calibration_min=4, calibration_max=4, calibration_votes=3, vote_cap=8
    )
    images = make_images(dataset, 5)
    monkeypatch.setattr(
        engine, "calibration_rebuild_enqueue", lambda *args: None
    )  # the test runs the rebuild
    verification.verification_queue(dataset=dataset, concept=concept, images=images[:4])
    for w in make_workers(3):
        for q in Question.objects.filter(role=QuestionRole.CALIBRATION):
            engine.vote_record(question=q, worker=w, answer=q.image_id % 2 == 0)
    built, creation_done = threading.Event(), threading.Event()
    reevaluate = tables.questions_reevaluate

    def reevaluate_then_linger(**kwargs):
        out = reevaluate(**kwargs)
        built.set()  # the table and the served questions exist, uncommitted
        # The rebuild's transaction stays open until the other thread's creation has run or is seen waiting on
        # it, not for a second that a loaded machine may spend before the creation even starts.
        a_lock_is_awaited(or_else=creation_done.is_set)
        return out

    monkeypatch.setattr(tables, "questions_reevaluate", reevaluate_then_linger)

    @in_thread
    def rebuild() -> None:
        tables.calibration_rebuild(kind="image_verify", concept_id=concept.pk, dataset_id=dataset.pk)

    @in_thread
    def create() -> int:
        built.wait(GENEROUS_SECONDS)
        try:
            (question,) = creation.questions_create(
                dataset=dataset,
                kind="image_verify",
                concept=concept,
                targets=[creation.Target(image=images[4])],
                calibration=[False],
            )
        finally:
            creation_done.set()
        return question.pk

    with ThreadPoolExecutor(2) as pool:
        done = pool.submit(rebuild)
        created = pool.submit(create).result()
        done.result()
    question = Question.objects.get(pk=created)
    assert question.state == "open" and question.task_id is not None, "left waiting with no task"
