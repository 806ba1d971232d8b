"""Priorities order tasks inside their own dataset only: a tenant who sets the highest priority on every task
does not push other tenants' work back, because each worker takes datasets in turn. Runs on SQLite and on
PostgreSQL (the one-statement SKIP LOCKED lease)."""

from __future__ import annotations

from collections import Counter

from annotation import queue
from annotation.models import PRIORITY_LIMIT
from tests import factories


def tasks_in_new_dataset(n: int, priority: int = 0):
    image = factories.ImageFactory()
    return [factories.TaskFactory(image=image, priority=priority) for _ in range(n)]


def lease_datasets(worker, n: int) -> list[int]:
    taken = []
    for _ in range(n):
        assignment = queue.task_lease_next(worker=worker)
        assert assignment is not None
        taken.append(assignment.task.dataset_id)
    return taken


def test_a_tenants_top_priority_does_not_starve_other_tenants(worker):
    pushy = tasks_in_new_dataset(6, priority=PRIORITY_LIMIT)
    quiet = tasks_in_new_dataset(6, priority=-PRIORITY_LIMIT)
    third = tasks_in_new_dataset(6, priority=0)
    taken = lease_datasets(worker.worker, 9)
    counts = Counter(taken)
    assert counts == {pushy[0].dataset_id: 3, quiet[0].dataset_id: 3, third[0].dataset_id: 3}
    assert len(set(taken[:3])) == 3, "each round visits every dataset with work once"


def test_inside_one_dataset_the_highest_priority_goes_first_then_the_oldest(worker):
    image = factories.ImageFactory()
    low_oldest = factories.TaskFactory(image=image, priority=0)
    high_older = factories.TaskFactory(image=image, priority=5)
    high_newer = factories.TaskFactory(image=image, priority=5)
    order = [queue.task_lease_next(worker=worker.worker).task_id for _ in range(3)]
    assert order == [high_older.pk, high_newer.pk, low_oldest.pk]


def test_a_dataset_running_dry_hands_its_turn_to_the_others(worker):
    small = tasks_in_new_dataset(1)
    big = tasks_in_new_dataset(4)
    taken = lease_datasets(worker.worker, 5)
    assert Counter(taken) == {small[0].dataset_id: 1, big[0].dataset_id: 4}
    assert queue.task_lease_next(worker=worker.worker) is None


def test_every_worker_goes_round_on_their_own(worker, other_worker):
    first = tasks_in_new_dataset(4)
    second = tasks_in_new_dataset(4)
    a = lease_datasets(worker.worker, 2)
    b = lease_datasets(other_worker.worker, 2)
    assert sorted(a) == sorted(b) == sorted([first[0].dataset_id, second[0].dataset_id])
