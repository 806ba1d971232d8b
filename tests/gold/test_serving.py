"""Gold mixed into the queue: the configured share of tasks, never the same item twice to one worker,
qualification before production, gold answers that never become consensus votes, and gold pool tasks that
only the gold policy's draw hands out."""

from __future__ import annotations

import numpy as np
import pytest
from django.utils import timezone

from annotation import queue
from annotation.models import Assignment, Task
from consensus.models import Question, Vote
from gold.models import GoldAnswer, GoldItem, GoldServing, GoldSettings, Purpose, WorkerScore
from gold.serving import GOLD_POOL, gold_due, lease_policy
from tests import factories
from tests.conftest import leased_task

from .conftest import gold_for, make_images, make_workers, production_questions, small_qualification


def lease_submit(worker, answer=True):
    a = queue.task_lease_next(worker=worker, kinds_wanted=["question"])
    assert a is not None
    queue.assignment_submit(assignment=a, answer={"answer": answer}, idempotency_key=f"k{a.pk}")
    return a


@pytest.mark.django_db
def test_a_new_worker_answers_the_qualification_set_before_any_production_task(dataset, concept):
    images = make_images(dataset, 20)
    production_questions(dataset, concept, images[:10])
    gold = gold_for(dataset, concept, images[10:])
    small_qualification(dataset)
    answers = {g.image_id: g.answer for g in gold}
    (w,) = make_workers(1)
    for i in range(8):
        a = queue.task_lease_next(worker=w, kinds_wanted=["question"])
        assert not Question.objects.filter(task=a.task).exists()
        queue.assignment_submit(
            assignment=a, answer={"answer": answers[a.task.image_id]}, idempotency_key=f"q{i}"
        )
        assert GoldServing.objects.filter(assignment=a, purpose=Purpose.QUALIFICATION).exists()
    assert WorkerScore.objects.get(worker=w, kind="image_verify").qualified
    GoldSettings.objects.filter(dataset=dataset).update(rate=0.0)
    a = queue.task_lease_next(worker=w, kinds_wanted=["question"])
    assert Question.objects.filter(task=a.task).exists(), "qualified: production now"


@pytest.mark.django_db
def test_an_unqualified_worker_never_gets_production_tasks_of_a_gated_kind(dataset, concept):
    images = make_images(dataset, 20)
    production_questions(dataset, concept, images[:10])
    gold = gold_for(dataset, concept, images[10:])
    small_qualification(dataset)
    answers = {g.image_id: g.answer for g in gold}
    (w,) = make_workers(1)
    seen_production = 0
    for i in range(10):  # always wrong: never qualifies; runs out of gold items, then gets nothing
        a = queue.task_lease_next(worker=w, kinds_wanted=["question"])
        if a is None:
            break
        seen_production += Question.objects.filter(task=a.task).exists()
        queue.assignment_submit(
            assignment=a, answer={"answer": not answers[a.task.image_id]}, idempotency_key=f"q{i}"
        )
    assert seen_production == 0
    assert not WorkerScore.objects.get(worker=w, kind="image_verify").qualified


@pytest.mark.django_db
def test_gold_answers_never_become_consensus_votes(dataset, concept):
    images = make_images(dataset, 20)
    production_questions(dataset, concept, images[:10])
    gold_for(dataset, concept, images[10:])
    small_qualification(dataset)
    (w,) = make_workers(1)
    lease_submit(w)
    assert Vote.objects.count() == 0
    assert GoldAnswer.objects.count() == 1
    # The item's pool task goes back to the gold pool for other workers, with no result of its own.
    task = Task.objects.get(gold_servings__isnull=False)
    assert task.pool == GOLD_POOL and task.state == "open" and task.result is None


@pytest.mark.django_db
def test_an_expired_gold_lease_returns_to_the_gold_pool_never_to_the_open_pool_nor_to_its_worker(
    dataset, concept
):
    from datetime import timedelta

    images = make_images(dataset, 20)
    production_questions(dataset, concept, images[:10])
    gold_for(dataset, concept, images[10:])
    small_qualification(dataset)
    w1, w2 = make_workers(2)
    a = queue.task_lease_next(worker=w1, kinds_wanted=["question"])
    assert Task.objects.get(pk=a.task_id).pool == GOLD_POOL
    queue.leases_expire(now=timezone.now() + timedelta(days=1))
    assert Task.objects.get(pk=a.task_id).state == "open"
    assert Assignment.objects.get(pk=a.pk).state == "expired"
    # Ordinary leases never reach it: only the gold policy's draw does, and never for the worker who had it.
    assert not queue.available_tasks(worker=w2).filter(pk=a.task_id).exists()
    draw = queue.Draw(pool=GOLD_POOL, task_ids=(a.task_id,))
    assert queue.available_tasks(worker=w2, draw=draw).filter(pk=a.task_id).exists()
    assert not queue.available_tasks(worker=w1, draw=draw).filter(pk=a.task_id).exists()


@pytest.mark.django_db
def test_a_skipped_gold_task_goes_back_to_the_gold_pool_and_ordinary_skipped_tasks_reopen(dataset, concept):
    images = make_images(dataset, 20)
    production_questions(dataset, concept, images[:10])
    gold_for(dataset, concept, images[10:])
    small_qualification(dataset)
    (w,) = make_workers(1)
    gold = queue.task_lease_next(worker=w, kinds_wanted=["question"])
    assert Task.objects.get(pk=gold.task_id).pool == GOLD_POOL
    queue.assignment_release(assignment=gold)
    assert Task.objects.get(pk=gold.task_id).state == "open"
    assert not queue.available_tasks(worker=w).filter(pk=gold.task_id).exists()
    ordinary = factories.TaskFactory()
    leased = queue.task_lease_next(worker=w, kinds_wanted=[ordinary.kind])
    queue.assignment_release(assignment=leased)
    assert Task.objects.get(pk=ordinary.pk).state == "open"


def test_gold_share_of_ten_thousand_served_tasks_is_the_rate_within_one_point():
    """The lease hook's gold draw over 10,000 leases of 20 workers, for several rates."""
    for rate in (0.05, 0.1, 0.2):
        share = np.mean([gold_due(0, w, n, rate) for w in range(1, 21) for n in range(500)])
        assert abs(share - rate) <= 0.01, (rate, share)


@pytest.mark.django_db
def test_served_gold_share_follows_the_rate_and_a_worker_never_sees_an_item_twice(dataset, concept):
    """Through the real lease policy and the queue (the ordinary lease stood in for by an assignment on a
    placeholder task)."""
    images = make_images(dataset, 120)
    production_questions(dataset, concept, images[:1])
    gold_for(dataset, concept, images[1:])
    GoldSettings.objects.create(dataset=dataset, rate=0.2, qualification_size=0, qualification_pass=0)
    workers = make_workers(2)
    now = timezone.now()
    served = gold = 0
    for w in workers:
        placeholders = Task.objects.bulk_create(
            Task(kind="binary_vote", dataset=dataset, state="done") for _ in range(300)
        )
        for placeholder in placeholders:
            served += 1
            draw = lease_policy(w, queue.LeaseRequest(("question",), None), now).draw
            if draw is not None and draw.lease:
                a = queue.task_lease_next(worker=w, kinds_wanted=["question"], now=now)
                assert a.task.pool == GOLD_POOL
                gold += 1
                queue.assignment_release(assignment=a, now=now)
            else:
                Assignment.objects.create(task=placeholder, worker=w, expires_at=now, state="released")
    assert abs(gold / served - 0.2) <= 0.05, gold / served
    pairs = list(Assignment.objects.filter(task__pool=GOLD_POOL).values_list("worker_id", "task__gold_item"))
    assert len(pairs) == len(set(pairs)) == gold


@pytest.mark.django_db
def test_qualification_items_are_announced_as_training_and_nothing_else_is(dataset, concept, api_client):
    """Issue 17: the worker page tells a new worker they are answering training questions (which a
    qualification attempt is, openly); embedded gold and production questions carry no such mark."""
    images = make_images(dataset, 24)
    production_questions(dataset, concept, images[:4])
    gold = gold_for(dataset, concept, images[4:])
    small_qualification(dataset, qualification_size=4, qualification_pass=4)
    answers = {g.image_id: g.answer for g in gold}
    (w,) = make_workers(1)
    client = api_client(w.user)

    def lease_and_answer():
        body = client.get("/api/v1/tasks/next").json()
        task = leased_task(body)
        right = answers.get(task.image_id, True)
        response = client.post(
            f"/api/v1/assignments/{body['id']}/submit",
            {"answer": {"answer": right}},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"k{body['id']}",
        )
        assert response.status_code == 201
        return body, task

    for number in range(1, 5):
        body, _ = lease_and_answer()
        assert body["training"] == {"number": number, "size": 4}
    assert WorkerScore.objects.get(worker=w, kind="image_verify").qualified
    GoldSettings.objects.filter(dataset=dataset).update(rate=0.99)
    body, task = lease_and_answer()
    assert GoldServing.objects.get(task=task, worker=w).purpose == Purpose.EMBEDDED
    assert "training" not in body
    GoldSettings.objects.filter(dataset=dataset).update(rate=0.0)
    body, task = lease_and_answer()
    assert Question.objects.filter(task=task).exists() and "training" not in body


@pytest.mark.django_db
def test_items_from_before_pool_tasks_get_theirs_from_the_command_once(dataset, concept):
    from django.core.management import CommandError, call_command

    from consensus.wording import question_text

    images = make_images(dataset, 3)
    old = [
        GoldItem.objects.create(dataset=dataset, kind="image_verify", concept=concept, image=i, answer=True)
        for i in images
    ]  # rows as they were before items got their task when added
    call_command("gold_pool_fill", "--dataset", dataset.name)
    tasks = Task.objects.filter(gold_item__in=old).order_by("id")
    assert [t.gold_item.pk for t in tasks] == [g.pk for g in old]
    assert {(t.pool, t.kind, t.topic, t.state) for t in tasks} == {
        (GOLD_POOL, "question", "image_verify", "open")
    }
    assert [t.payload for t in tasks] == [
        {"question": question_text("image_verify", concept, dataset.pk)}
    ] * 3
    call_command("gold_pool_fill")
    assert Task.objects.filter(pool=GOLD_POOL).count() == 3, "nothing made twice"
    with pytest.raises(CommandError):
        call_command("gold_pool_fill", "--dataset", "no such dataset")
