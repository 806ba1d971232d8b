"""Undo on gold (issue 17): an embedded gold item's answer is taken back exactly as an open question's is, as
the worker sees it (201 and a new lease on the same task), so an undo tells no gold item apart; the score keeps
the answer first given and the answer given again is not scored. A training answer stands (409)."""

from __future__ import annotations

import pytest

from annotation.models import Assignment, AssignmentState, Task
from gold.models import GoldAnswer, GoldServing, GoldSettings, Purpose, WorkerScore
from tests.conftest import leased_task

from .conftest import gold_for, make_images, make_workers, production_questions, small_qualification

pytestmark = pytest.mark.django_db


def lease(client) -> dict:
    body = client.get("/api/v1/tasks/next", {"kinds": "question"}).json()
    assert body, "a task was leased"
    return body


def submit(client, body, answer: bool):
    response = client.post(
        f"/api/v1/assignments/{body['id']}/submit",
        {"answer": {"answer": answer}},
        format="json",
        HTTP_IDEMPOTENCY_KEY=f"k{body['id']}",
    )
    assert response.status_code == 201, response.content
    return response


def test_an_embedded_gold_answer_is_taken_back_like_any_other_and_the_first_answer_is_scored(
    dataset, concept, api_client
):
    images = make_images(dataset, 12)
    production_questions(dataset, concept, images[:2])
    gold = {g.task_id: g for g in gold_for(dataset, concept, images[2:])}
    GoldSettings.objects.create(dataset=dataset, rate=0.99, qualification_size=0, qualification_pass=0)
    (w,) = make_workers(1)
    client = api_client(w.user)
    body = lease(client)
    item = gold[leased_task(body).pk]
    wrong = not item.answer
    submit(client, body, wrong)

    undone = client.post(f"/api/v1/assignments/{body['id']}/undo")
    assert undone.status_code == 201, undone.content
    again = undone.json()
    assert leased_task(again).pk == leased_task(body).pk and again["state"] == "leased"
    assert set(again) == set(body) and set(again["task"]["payload"]) == set(body["task"]["payload"])
    assert Assignment.objects.get(pk=body["id"]).state == AssignmentState.WITHDRAWN

    submit(client, again, item.answer)  # the right answer now: not scored
    serving = GoldServing.objects.get(item=item, worker=w)
    assert serving.purpose == Purpose.EMBEDDED
    assert list(GoldAnswer.objects.filter(worker=w).values_list("correct", flat=True)) == [False]
    score = WorkerScore.objects.get(worker=w, dataset=dataset, kind="all")
    assert score.answered == 1 and score.correct == 0
    assert Task.objects.get(pk=item.task_id).pool == "gold"  # still in the pool for other workers


def test_a_training_answer_stands(dataset, concept, api_client):
    images = make_images(dataset, 12)
    production_questions(dataset, concept, images[:2])
    gold_for(dataset, concept, images[2:])
    small_qualification(dataset, qualification_size=4, qualification_pass=4)
    (w,) = make_workers(1)
    client = api_client(w.user)
    body = lease(client)
    assert body["training"]["number"] == 1
    submit(client, body, True)
    response = client.post(f"/api/v1/assignments/{body['id']}/undo")
    assert response.status_code == 409 and "training answer stands" in response.json()["detail"]
    assert Assignment.objects.get(pk=body["id"]).state == AssignmentState.SUBMITTED
    assert GoldAnswer.objects.filter(worker=w).count() == 1
