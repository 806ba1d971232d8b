"""Gold inside leases of several tasks (`tasks/next?count=N`): each place is gold exactly when a single lease
with that number would be (so the share is the rate), drawn items never repeat for a worker, and while a
worker qualifies a lease holds one task at a time."""

from __future__ import annotations

import numpy as np
import pytest

from annotation import queue
from annotation.models import Assignment
from consensus.models import Question
from gold.models import GoldSettings, Purpose
from gold.serving import GOLD_POOL, gold_due

from .conftest import gold_for, make_images, make_workers, production_questions, small_qualification

pytestmark = pytest.mark.django_db


def test_gold_in_leases_of_several_follows_the_rate_place_by_place_and_never_repeats(dataset, concept):
    images = make_images(dataset, 400)
    production_questions(dataset, concept, images[:300], vote_cap=15)
    gold_for(dataset, concept, images[300:])
    settings = GoldSettings.objects.create(
        dataset=dataset, rate=0.2, qualification_size=0, qualification_pass=0
    )
    rng = np.random.default_rng(7)
    served = gold = 0
    places = set()
    for w in make_workers(3):
        taken = 0
        while taken < 100:
            before = Assignment.objects.filter(worker=w, task__dataset=dataset).count()
            count = int(rng.integers(1, 11))
            leases = queue.task_lease_many(worker=w, count=count, kinds_wanted=["question"])
            assert len(leases) == count
            drawn = [i for i, lease in enumerate(leases) if lease.assignment.task.pool == GOLD_POOL]
            due = [i for i in range(count) if gold_due(settings.seed, w.pk, before + i, settings.rate)]
            assert drawn == due, "each place is gold exactly when a single lease with its number is"
            assert all(leases[i].assignment.lease_note == Purpose.EMBEDDED for i in drawn)
            assert not any(lease.assignment.lease_note for i, lease in enumerate(leases) if i not in drawn)
            places.update(drawn)
            for lease in leases:  # skipped: the question stays open for the next worker
                queue.assignment_release(assignment=lease.assignment)
            taken += count
            served += count
            gold += len(drawn)
    assert abs(gold / served - 0.2) <= 0.06, gold / served
    assert len(places) > 3, "gold takes any place in a lease, not a fixed one"
    pairs = list(Assignment.objects.filter(task__pool=GOLD_POOL).values_list("worker_id", "task__gold_item"))
    assert len(pairs) == len(set(pairs)) == gold, "no worker was served an item twice"


def test_while_a_worker_qualifies_a_lease_of_several_holds_one_qualification_item(dataset, concept):
    images = make_images(dataset, 20)
    production_questions(dataset, concept, images[:10])
    gold_for(dataset, concept, images[10:])
    small_qualification(dataset)
    (w,) = make_workers(1)
    leases = queue.task_lease_many(worker=w, count=10, kinds_wanted=["question"])
    assert len(leases) == 1
    (lease,) = leases
    assert lease.assignment.task.pool == GOLD_POOL
    assert lease.assignment.lease_note.startswith(Purpose.QUALIFICATION)
    assert not Question.objects.filter(task=lease.assignment.task).exists()
