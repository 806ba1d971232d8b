"""The per-(dataset, worker) answer counter the organizer's People list reads (`WorkerTally`) stays equal to a
recount from the assignments through submits, answers taken back, leases that expire or are skipped, a
rolled-back submit and imported history; `counters_recount` repairs it; on PostgreSQL a submit still pays a
single counter statement for it and the usage counter together."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation import counters, queue
from annotation.models import Assignment, AssignmentState, WorkerStageTally, WorkerTally
from tests import factories


def assert_worker_tally_matches_a_recount(dataset_id: int) -> None:
    assert counters.worker_tally_stored(dataset_id) == counters.worker_tally_expected(dataset_id)
    assert counters.worker_stage_tally_stored(dataset_id) == counters.worker_stage_tally_expected(dataset_id)
    assert counters.counters_stored(dataset_id) == counters.counters_expected(dataset_id)


def submit(assignment: Assignment) -> None:
    queue.assignment_submit(
        assignment=assignment, answer={"answer": True}, idempotency_key=f"k{assignment.pk}"
    )


def lease(worker, dataset) -> Assignment:
    assignment = queue.task_lease_next(worker=worker, dataset_id=dataset.pk)
    assert assignment is not None
    return assignment


@pytest.mark.django_db
def test_submits_undos_expiries_skips_and_rollbacks_leave_the_worker_tally_equal_to_a_recount(dataset):
    # Seven answers wanted per plain vote (a majority of four): the three workers who answer decide nothing,
    # so every answer can be taken back.
    for _ in range(6):
        factories.TaskFactory(image=factories.ImageFactory(dataset=dataset), answers_wanted=7)
    other = factories.DatasetFactory()
    factories.TaskFactory(image=factories.ImageFactory(dataset=other))
    steady, undoer, idler, skipper, regretful = (
        factories.user_with_roles(f"w{i}", ("workers",)).worker for i in range(5)
    )
    for _ in range(3):
        submit(lease(steady, dataset))
    submit(lease(steady, other))  # counted for the other dataset only

    first = lease(undoer, dataset)
    submit(first)
    submit(lease(undoer, dataset))
    again = queue.assignment_withdraw(assignment=first.pk, worker=undoer).lease
    assert_worker_tally_matches_a_recount(dataset.pk)
    submit(again)  # answered again: the task's new lease
    taken_back = queue.assignment_withdraw(assignment=again.pk, worker=undoer).lease

    lease(idler, dataset)  # never submitted: the lease runs out
    queue.assignment_release(assignment=lease(skipper, dataset))
    mine = lease(regretful, dataset)
    submit(mine)
    queue.assignment_withdraw(assignment=mine.pk, worker=regretful)  # every answer taken back
    doomed = lease(skipper, dataset)
    with pytest.raises(RuntimeError), transaction.atomic():
        submit(doomed)
        raise RuntimeError("the caller's transaction fails after the submit")
    later = timezone.now() + timedelta(hours=1)
    assert queue.leases_expire(now=later) >= 3  # the idler's, the undoer's, the regretful's and the skipper's

    assert counters.worker_tally_stored(dataset.pk) == {
        steady.pk: 3,
        undoer.pk: 1,  # two answers, one taken back twice (the second after answering it again)
        regretful.pk: 0,  # answered, then took it back: still one of the dataset's workers
    }, "a lease that ran out, a skip and a rolled-back submit are no answers"
    assert taken_back.state == AssignmentState.LEASED
    assert counters.worker_tally_stored(other.pk) == {steady.pk: 1}
    assert_worker_tally_matches_a_recount(dataset.pk)
    assert_worker_tally_matches_a_recount(other.pk)
    assert counters.counters_recount(dataset.pk) == 0, "nothing to correct"


@pytest.mark.django_db
def test_imported_history_counts_each_worker_once_and_a_withdrawn_answer_as_none(dataset):
    worker, other, idle = (factories.user_with_roles(f"w{i}", ("workers",)).worker for i in range(3))
    tasks = [factories.TaskFactory(image=factories.ImageFactory(dataset=dataset)) for _ in range(3)]
    now = timezone.now()

    def row(task, who, state):
        submitted = now if state in (AssignmentState.SUBMITTED, AssignmentState.WITHDRAWN) else None
        return Assignment(task=task, worker=who, state=state, leased_at=now - timedelta(seconds=5),
                          expires_at=now, submitted_at=submitted)  # fmt: skip

    queue.assignments_import(
        [
            row(tasks[0], worker, AssignmentState.SUBMITTED),
            row(tasks[1], worker, AssignmentState.SUBMITTED),
            row(tasks[0], other, AssignmentState.WITHDRAWN),
            row(tasks[2], idle, AssignmentState.EXPIRED),
        ]
    )
    assert counters.worker_tally_stored(dataset.pk) == {worker.pk: 2, other.pk: 0}
    stage = counters.task_stage(tasks[0])
    assert counters.worker_stage_tally_stored(dataset.pk) == {
        (worker.pk, stage): {"answers": 2, "worker_microseconds": 10_000_000},
        (other.pk, stage): {"answers": 0, "worker_microseconds": 0},
    }
    assert_worker_tally_matches_a_recount(dataset.pk)


@pytest.mark.django_db
def test_counters_recount_repairs_wrong_missing_and_stray_worker_rows(dataset):
    worker, other, stranger = (factories.user_with_roles(f"w{i}", ("workers",)).worker for i in range(3))
    factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))
    factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))
    submit(lease(worker, dataset))
    submit(lease(other, dataset))
    WorkerTally.objects.filter(dataset=dataset, worker=worker).update(answers=7)
    WorkerTally.objects.filter(dataset=dataset, worker=other).delete()
    WorkerTally.objects.create(dataset=dataset, worker=stranger, answers=2)
    assert counters.counters_recount(dataset.pk) == 3
    assert counters.worker_tally_stored(dataset.pk) == {worker.pk: 1, other.pk: 1}
    assert counters.counters_recount(dataset.pk) == 0


@pytest.mark.django_db
def test_counters_recount_repairs_wrong_missing_and_stray_worker_stage_rows(dataset):
    worker, other, stranger = (factories.user_with_roles(f"w{i}", ("workers",)).worker for i in range(3))
    factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))
    factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))
    submit(lease(worker, dataset))
    submit(lease(other, dataset))
    expected = counters.worker_stage_tally_expected(dataset.pk)
    assert counters.worker_stage_tally_stored(dataset.pk) == expected and len(expected) == 2
    WorkerStageTally.objects.filter(dataset=dataset, worker=worker).update(answers=7, worker_microseconds=1)
    WorkerStageTally.objects.filter(dataset=dataset, worker=other).delete()
    WorkerStageTally.objects.create(dataset=dataset, worker=stranger, stage="box_draw", answers=2)
    assert counters.counters_recount(dataset.pk) == 3
    assert counters.worker_stage_tally_stored(dataset.pk) == expected
    assert counters.counters_recount(dataset.pk) == 0


@pytest.mark.postgres
@pytest.mark.django_db
def test_on_postgresql_a_submit_counts_usage_worker_and_worker_stage_in_one_statement(dataset):
    factories.TaskFactory(image=factories.ImageFactory(dataset=dataset), answers_wanted=7)
    worker = factories.user_with_roles("w1", ("workers",)).worker
    assignment = lease(worker, dataset)
    with CaptureQueriesContext(connection) as captured:
        submit(assignment)
    counting = [q["sql"] for q in captured.captured_queries if "usagecounter" in q["sql"]]
    assert len(counting) == 1 and "workertally" in counting[0] and "workerstagetally" in counting[0], counting
    assert not [
        q
        for q in captured.captured_queries
        if ("workertally" in q["sql"] or "workerstagetally" in q["sql"]) and q["sql"] not in counting
    ]
    assert counters.worker_tally_stored(dataset.pk) == {worker.pk: 1}
    assert_worker_tally_matches_a_recount(dataset.pk)


@pytest.mark.django_db
def test_counters_recount_reads_the_datasets_answers_once(dataset):
    """The usage, worker and worker-and-stage rows are recounted from one reading of the dataset's answers (a
    join of its tasks to their answers: at 10,000,000 tasks the recount's time was in these joins)."""
    worker = factories.user_with_roles("w1", ("workers",)).worker
    factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))
    submit(lease(worker, dataset))
    with CaptureQueriesContext(connection) as captured:
        assert counters.counters_recount(dataset.pk) == 0
    reads = [q["sql"] for q in captured.captured_queries if 'FROM "annotation_assignment"' in q["sql"]]
    assert len(reads) == 1, reads
