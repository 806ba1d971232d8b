"""The queue under real concurrency on PostgreSQL: every task leased exactly once, submits stored once."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from annotation import queue
from annotation.models import Assignment, AssignmentState, Dataset, Image, Task, TaskState
from crowd.models import Worker
from hierarchy.models import Concept
from tests import factories
from tests.threads import in_thread

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

THREADS = 50
TASKS = 1000


def _make_tasks(n: int) -> None:
    concept = Concept.objects.create(wnid="n02084071", name="dog")
    dataset = Dataset.objects.create(name="concurrency")
    images = Image.objects.bulk_create(
        Image(dataset=dataset, file=f"x/{i}.png", width=10, height=10, sha256=f"{i:064x}", phash="0" * 16)
        for i in range(n)
    )
    Task.objects.bulk_create(
        Task(kind="binary_vote", dataset=dataset, image=image, concept=concept, answers_wanted=1)
        for image in images
    )


def test_fifty_workers_drain_a_thousand_tasks_each_leased_exactly_once():
    _make_tasks(TASKS)
    workers = [factories.user_with_roles(f"w{i}", ("workers",)).worker for i in range(THREADS)]
    start = threading.Barrier(THREADS)

    @in_thread
    def drain(worker: Worker) -> list[int]:
        taken = []
        start.wait()
        while True:
            assignment = queue.task_lease_next(worker=worker)
            if assignment is None:
                return taken
            taken.append(assignment.task_id)
            queue.assignment_submit(
                assignment=assignment, answer={"answer": True}, idempotency_key=f"k{assignment.pk}"
            )

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(drain, workers))

    leased = Counter(task_id for taken in results for task_id in taken)
    assert len(leased) == TASKS, "every task was leased"
    assert max(leased.values()) == 1, "no task was leased twice"
    assert sum(1 for taken in results if taken) > 1, "the work was shared between workers"
    assert Task.objects.filter(state=TaskState.DONE).count() == TASKS
    assert Assignment.objects.filter(state=AssignmentState.SUBMITTED).count() == TASKS


def test_simultaneous_retries_of_one_submit_store_it_once():
    _make_tasks(1)
    worker = factories.user_with_roles("solo", ("workers",)).worker
    assignment = queue.task_lease_next(worker=worker)
    barrier = threading.Barrier(8)

    @in_thread
    def retry(_):
        barrier.wait()
        return queue.assignment_submit(
            assignment=assignment, answer={"answer": False}, idempotency_key="same"
        ).replayed

    with ThreadPoolExecutor(8) as pool:
        replayed = list(pool.map(retry, range(8)))
    assert replayed.count(False) == 1 and replayed.count(True) == 7
    task = Task.objects.get()
    assert task.answers_count == 1
    assert connection.vendor == "postgresql"


def test_expiry_sweep_running_during_leasing_never_double_leases():
    from datetime import timedelta

    from django.utils import timezone

    _make_tasks(200)
    workers = [factories.user_with_roles(f"x{i}", ("workers",)).worker for i in range(10)]
    # First pass: everyone leases and abandons; then the leases are expired and swept while a second pass leases.
    for worker in workers:
        for _ in range(10):
            queue.task_lease_next(worker=worker)
    past = timezone.now() - timedelta(seconds=1)
    Task.objects.filter(state=TaskState.LEASED).update(lease_expires_at=past)
    Assignment.objects.filter(state=AssignmentState.LEASED).update(expires_at=past)
    fresh = [factories.user_with_roles(f"y{i}", ("workers",)).worker for i in range(10)]

    @in_thread
    def lease_all(worker):
        out = []
        while (a := queue.task_lease_next(worker=worker)) is not None:
            out.append(a.task_id)
        return out

    @in_thread
    def sweep(_):
        return queue.leases_expire()

    with ThreadPoolExecutor(12) as pool:
        leases = pool.map(lease_all, fresh)
        sweeps = pool.map(sweep, range(2))
        taken = [t for batch in leases for t in batch]
        list(sweeps)
    assert len(taken) == len(set(taken)) == 200
    assert Assignment.objects.filter(state=AssignmentState.LEASED).count() == 200
