"""Several tasks per request: `tasks/next?count=N` leases up to N tasks by the single lease's rules (datasets in
turn, nothing twice), and `assignments/submit` stores a batch of answers in one transaction with a result per
answer: the valid ones stored once, the others refused by name, a retried batch answered as before. Runs on
SQLite and on PostgreSQL (where the lease is one statement)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import queue
from annotation.models import Assignment, AssignmentState, Task, TaskState
from tests import factories
from tests.conftest import leased_task

pytestmark = pytest.mark.django_db


def lease_many(client, count, **params):
    return client.get("/api/v1/tasks/next", {"count": count, **params})


def submit_many(client, answers):
    return client.post("/api/v1/assignments/submit", {"answers": answers}, format="json")


def item(assignment_id, key, answer=True):
    return {"assignment": assignment_id, "idempotency_key": key, "answer": {"answer": answer}}


def test_without_count_the_lease_answers_as_it_always_did(worker, api_client):
    factories.TaskFactory()
    client = api_client(worker)
    response = client.get("/api/v1/tasks/next")
    assert response.status_code == 200
    assert "tasks" not in response.json() and response.json()["state"] == "leased"
    assert client.get("/api/v1/tasks/next").status_code == 204


def test_count_leases_up_to_that_many_tasks_each_shaped_as_a_single_lease(worker, api_client):
    image = factories.ImageFactory()
    tasks = [factories.TaskFactory(image=image, priority=p) for p in (1, 5, 3, 4)]
    client = api_client(worker)
    single_keys = None
    response = lease_many(client, 3)
    assert response.status_code == 200
    leases = response.json()["tasks"]
    assert [leased_task(lease).pk for lease in leases] == [tasks[1].pk, tasks[3].pk, tasks[2].pk], (
        "highest priority first, as single leases in a row take them"
    )
    assert [lease["id"] for lease in leases] == sorted(lease["id"] for lease in leases)
    for lease in leases:
        assert lease["state"] == "leased" and "examples" in lease["task"] and "instructions" in lease["task"]
        single_keys = single_keys or set(lease)
        assert set(lease) == single_keys
    rest = lease_many(client, 50).json()["tasks"]
    assert [leased_task(lease).pk for lease in rest] == [tasks[0].pk], "fewer left than asked: what is left"
    assert lease_many(client, 5).json() == {"tasks": []}, "none left: an empty list, not a 204"
    assert Task.objects.filter(state=TaskState.LEASED).count() == 4
    assert Assignment.objects.filter(worker=worker.worker, state=AssignmentState.LEASED).count() == 4


def test_a_lease_of_several_goes_round_the_datasets_as_single_leases_do(worker, api_client, organizer):
    datasets = [factories.DatasetFactory(organizers=[organizer]) for _ in range(3)]
    for dataset in datasets:
        image = factories.ImageFactory(dataset=dataset)
        for _ in range(3):
            factories.TaskFactory(dataset=dataset, image=image)
    client = api_client(worker)
    first = [leased_task(lease).dataset_id for lease in lease_many(client, 4).json()["tasks"]]
    ids = [d.pk for d in datasets]
    assert first == [ids[0], ids[1], ids[2], ids[0]]
    # The next lease starts after the dataset the last one came from, as a single lease would.
    assert leased_task(client.get("/api/v1/tasks/next").json()).dataset_id == ids[1]


@pytest.mark.parametrize("count", ["0", "51", "-1", "", "x", str(2**63)])
def test_a_count_outside_1_to_50_is_refused_naming_it(worker, api_client, count):
    factories.TaskFactory()
    response = api_client(worker).get("/api/v1/tasks/next", {"count": count})
    assert response.status_code == 400
    assert "count" in response.json()
    assert not Assignment.objects.exists()


def test_a_batch_stores_the_valid_answers_and_names_every_refused_one(worker, other_worker, api_client):
    image = factories.ImageFactory()
    for _ in range(5):
        factories.TaskFactory(image=image)
    client = api_client(worker)
    good, bad_answer, expired, good2 = (lease["id"] for lease in lease_many(client, 4).json()["tasks"])
    foreign = queue.task_lease_next(worker=other_worker.worker).pk
    Assignment.objects.filter(pk=expired).update(expires_at=timezone.now() - timedelta(seconds=1))
    answers = [
        item(good, "k-good"),
        {"assignment": bad_answer, "idempotency_key": "k-bad", "answer": {"answer": "maybe"}},
        item(expired, "k-expired"),
        item(foreign, "k-foreign"),
        item(999_999, "k-unknown"),
        item(good2, "k-good2", answer=False),
    ]
    response = submit_many(client, answers)
    assert response.status_code == 200
    results = response.json()["results"]
    assert [(r["assignment"], r["status"], r["code"]) for r in results] == [
        (good, 200, "stored"),
        (bad_answer, 400, "answer_invalid"),
        (expired, 409, "lease_expired"),
        (foreign, 404, "not_found"),
        (999_999, 404, "not_found"),
        (good2, 200, "stored"),
    ]
    assert all(r["detail"] for r in results if r["code"] != "stored")
    assert results[0]["result"]["state"] == "submitted" and results[1]["result"] is None
    assert not any(r["replayed"] for r in results)
    stored = Assignment.objects.filter(state=AssignmentState.SUBMITTED)
    assert sorted(stored.values_list("pk", "idempotency_key")) == [(good, "k-good"), (good2, "k-good2")]
    assert Assignment.objects.get(pk=bad_answer).state == AssignmentState.LEASED, (
        "a refused answer changes nothing"
    )
    assert Assignment.objects.get(pk=foreign).state == AssignmentState.LEASED
    assert Task.objects.filter(answers_count=1).count() == 2


def test_a_batch_sent_again_with_the_same_keys_stores_nothing_twice_and_answers_as_before(worker, api_client):
    image = factories.ImageFactory()
    for _ in range(3):
        factories.TaskFactory(image=image)
    client = api_client(worker)
    a, b, c = (lease["id"] for lease in lease_many(client, 3).json()["tasks"])
    answers = [
        item(a, "ka"),
        {"assignment": b, "idempotency_key": "kb", "answer": {"answer": "maybe"}},
        item(c, "kc"),
    ]
    first = submit_many(client, answers).json()["results"]
    again = submit_many(client, answers).json()["results"]
    assert [r["replayed"] for r in again] == [True, False, True]
    drop = lambda results: [{k: v for k, v in r.items() if k != "replayed"} for r in results]  # noqa: E731
    assert drop(again) == drop(first), "each answer gets the result it got before"
    assert Task.objects.filter(answers_count=1).count() == 2 and not Task.objects.filter(answers_count=2)
    # Another key on a stored answer is refused, as the single submit refuses it.
    other = submit_many(client, [item(a, "another")]).json()["results"][0]
    assert (other["status"], other["code"]) == (409, "already_submitted")


@pytest.mark.parametrize(
    "body, field",
    [
        ({"answers": []}, "answers"),
        ({"answers": [item(1, f"k{i}") for i in range(51)]}, "answers"),
        ({"answers": [{"assignment": 1, "answer": {"answer": True}}]}, "idempotency_key"),
        ({"answers": [item(1, "k" * 129)]}, "idempotency_key"),
        ({"answers": [item(2**63, "k")]}, "assignment"),
        ({}, "answers"),
    ],
)
def test_a_malformed_batch_is_refused_whole_naming_the_field(worker, api_client, body, field):
    factories.TaskFactory()
    lease = queue.task_lease_next(worker=worker.worker)
    response = api_client(worker).post("/api/v1/assignments/submit", body, format="json")
    assert response.status_code == 400
    assert field in response.content.decode()
    assert Assignment.objects.get(pk=lease.pk).state == AssignmentState.LEASED


def test_only_workers_submit_batches_and_lease_several(organizer, api_client):
    client = api_client(organizer)
    assert client.get("/api/v1/tasks/next", {"count": 2}).status_code == 403
    assert submit_many(client, [item(1, "k")]).status_code == 403


def test_the_service_refuses_counts_outside_its_bounds(worker):
    for count in (0, queue.MANY_MAX + 1):
        with pytest.raises(ValueError):
            queue.task_lease_many(worker=worker.worker, count=count)
        with pytest.raises(ValueError):
            queue.assignments_submit_many(
                worker=worker.worker,
                answers=[queue.Answer(1, {"answer": True}, f"k{i}") for i in range(count)],
            )
