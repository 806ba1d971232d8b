"""The cost ledger endpoint: usage from the queue's rows, priced at the dataset's settings; organizers only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, AssignmentState
from crowd.models import Worker
from tests import factories

pytestmark = pytest.mark.django_db


def answered(task, worker, seconds):
    now = timezone.now()
    a = Assignment.objects.create(task=task, worker=worker, expires_at=now, state=AssignmentState.SUBMITTED)
    Assignment.objects.filter(pk=a.pk).update(leased_at=now - timedelta(seconds=seconds), submitted_at=now)


def test_the_ledger_counts_tasks_answers_and_seconds_per_stage_and_synset(
    api_client, organizer, dataset, worker, other_worker, django_assert_max_num_queries
):
    dog = factories.ConceptFactory(wnid="n02084071")
    cat = factories.ConceptFactory(wnid="n02121808")
    images = factories.ImageFactory.create_batch(2, dataset=dataset)
    dog_tasks = [factories.TaskFactory(image=i, concept=dog) for i in images]
    cat_task = factories.TaskFactory(image=images[0], concept=cat)
    w1, w2 = Worker.objects.get(user=worker), Worker.objects.get(user=other_worker)
    answered(dog_tasks[0], w1, 4)
    answered(dog_tasks[0], w2, 6)
    answered(dog_tasks[1], w1, 5)
    answered(cat_task, w2, 3)
    factories.TaskFactory(concept=dog)  # another dataset's task: not counted
    client = api_client(organizer)
    patch = client.patch(
        f"/api/v1/datasets/{dataset.pk}/cost-settings",
        {"rewards": {"binary_vote": 0.02}, "fee_fraction": 0.5},
        format="json",
    )
    assert patch.status_code == 200, patch.data
    with django_assert_max_num_queries(8):
        ledger = client.get(f"/api/v1/datasets/{dataset.pk}/cost").data
    rows = {(r["stage"], r["wnid"]): r for r in ledger["rows"]}
    assert set(rows) == {("binary_vote", "n02084071"), ("binary_vote", "n02121808")}
    dog_row = rows[("binary_vote", "n02084071")]
    assert (dog_row["tasks"], dog_row["answers"], dog_row["worker_seconds"]) == (2, 3, 15.0)
    assert dog_row["cost"] == pytest.approx(3 * 0.02 * 1.5)
    assert ledger["totals"]["answers"] == 4 and ledger["totals"]["cost"] == pytest.approx(4 * 0.03)


def test_bad_prices_are_refused_naming_the_field(api_client, organizer, dataset):
    response = api_client(organizer).patch(
        f"/api/v1/datasets/{dataset.pk}/cost-settings", {"fee_fraction": -1}, format="json"
    )
    assert response.status_code == 400 and "fee_fraction" in response.data
