"""Leases of several tasks and batches of answers under real concurrency on PostgreSQL: fifty workers draining the
queue with random lease sizes lease every task exactly once, and simultaneous runs of one batch store each
answer once."""

from __future__ import annotations

import random
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from annotation import queue
from annotation.models import Assignment, AssignmentState, Task, TaskState
from crowd.models import Worker
from tests import factories
from tests.annotation.test_queue_concurrency import _make_tasks
from tests.threads import in_thread

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

THREADS = 50


def _drain_with_leases_of_several(n_tasks: int) -> None:
    _make_tasks(n_tasks)
    workers = [factories.user_with_roles(f"w{i}", ("workers",)).worker for i in range(THREADS)]
    start = threading.Barrier(THREADS)

    @in_thread
    def drain(worker: Worker) -> list[int]:
        rng = random.Random(worker.pk)
        taken: list[int] = []
        start.wait()
        while True:
            leases = queue.task_lease_many(worker=worker, count=rng.randint(1, queue.MANY_MAX))
            if not leases:
                return taken
            taken.extend(lease.assignment.task_id for lease in leases)
            answers = [
                queue.Answer(lease.assignment.pk, {"answer": True}, f"k{lease.assignment.pk}")
                for lease in leases
            ]
            results = queue.assignments_submit_many(worker=worker, answers=answers)
            assert all(r.stored for r in results), [r.code for r in results if not r.stored]

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(drain, workers))

    leased = Counter(task_id for taken in results for task_id in taken)
    assert len(leased) == n_tasks, "every task was leased"
    assert max(leased.values()) == 1, "no task was leased twice"
    assert sum(1 for taken in results if taken) > 1, "the work was shared between workers"
    assert Task.objects.filter(state=TaskState.DONE).count() == n_tasks
    assert Assignment.objects.filter(state=AssignmentState.SUBMITTED).count() == n_tasks
    assert not Assignment.objects.exclude(state=AssignmentState.SUBMITTED).exists()


def test_fifty_workers_with_random_lease_sizes_drain_a_thousand_tasks_each_leased_once():
    _drain_with_leases_of_several(1000)


@pytest.mark.slow
def test_fifty_workers_with_random_lease_sizes_drain_five_thousand_tasks_each_leased_once():
    _drain_with_leases_of_several(5000)


def test_simultaneous_runs_of_one_batch_store_each_answer_once():
    _make_tasks(10)
    worker = factories.user_with_roles("solo", ("workers",)).worker
    leases = queue.task_lease_many(worker=worker, count=10)
    answers = [
        queue.Answer(lease.assignment.pk, {"answer": False}, f"same-{i}") for i, lease in enumerate(leases)
    ]
    barrier = threading.Barrier(8)

    @in_thread
    def run(_):
        barrier.wait()
        return [
            (r.status, r.code, r.result.replayed)
            for r in queue.assignments_submit_many(worker=worker, answers=answers)
        ]

    with ThreadPoolExecutor(8) as pool:
        runs = list(pool.map(run, range(8)))
    assert all(status == 200 and code == "stored" for outcome in runs for status, code, _ in outcome)
    first = [outcome for outcome in runs if not any(replayed for _, _, replayed in outcome)]
    assert len(first) == 1, "one run stored the batch, every other one replayed it whole"
    assert all(all(replayed for _, _, replayed in outcome) for outcome in runs if outcome not in first)
    assert list(Task.objects.values_list("answers_count", flat=True)) == [1] * 10
    assert Assignment.objects.filter(state=AssignmentState.SUBMITTED).count() == 10
