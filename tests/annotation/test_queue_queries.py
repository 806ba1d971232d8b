"""Query counts of the worker's hot path (next task, then submit) through real token authentication.

The counts are pinned so a change that adds a query per request shows up here, not only in the benchmark."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework import serializers
from rest_framework.test import APIClient

from annotation.imagerefs import image_ref
from annotation.models import Assignment, Task, TaskState
from annotation.serializers import AssignmentSerializer, WorkerTaskSerializer
from consensus.binary_vote import vote_tasks_create
from crowd.services import token_for
from tests import factories

pytestmark = pytest.mark.django_db

# Statements per request, transaction control (BEGIN/SAVEPOINT/COMMIT) left out.
# Next task: token, the gold lease hook's "any gold?" check, then the lease itself: one statement on
# PostgreSQL (lock, reclaim, lease, insert and read back with the task's shown example images), four on SQLite
# (no SKIP LOCKED, no data-modifying CTE), which then reads the examples (annotation/examples.py) on their own.
# Submit: token, lock the task and read the assignment, store the answer, write the task, add the answer and its
# worker time to the dataset's usage counter and the answer to the worker's (the cost ledger and the People
# list, annotation/counters.py; two statements on SQLite). Then the one decision engine's vote (a plain vote is a
# consensus question with a fixed-majority rule): lock the question (the voter is the submitting worker, already
# read), insert the vote, write its counts. The submit that closes a vote writes the counts with the verdict,
# inserts the decision row, writes its final label in the same transaction (PostgreSQL: an INSERT ... ON
# CONFLICT DO NOTHING; elsewhere lock the (image, class) row, insert it) and moves the question tally; a question
# that was never in review has no review item to clear. On PostgreSQL every write the answer causes after the
# vote (the question's counts or verdict, tally, decision, final label, task, both counters) goes in one
# statement (the submit's annotation.queue.sqlrows.Writes), so closing a vote costs no extra round trip there.
NEXT_TASK_QUERIES = {"postgresql": 3, "sqlite": 7}
SUBMIT_QUERIES = {
    "postgresql": 3 + 2 + 1,  # token, read, answer; question lock, vote; the writes together
    "sqlite": 7
    + 3,  # token, read, answer, task, three counters (usage, worker stage, worker); question lock, vote, its counts
}
CLOSING_SUBMIT_QUERIES = {
    "postgresql": SUBMIT_QUERIES["postgresql"],
    "sqlite": SUBMIT_QUERIES["sqlite"]
    + 5,  # the writes a decision adds, one by one on SQLite (one more since the spammer test's message)
}


def vote_task(answers_wanted: int = 1) -> Task:
    """A plain vote queued the way every caller queues one (its consensus question created with it)."""
    image = factories.ImageFactory()
    (task,) = vote_tasks_create(
        dataset=image.dataset,
        concept=factories.ConceptFactory(),
        images=[image],
        answers_wanted=answers_wanted,
    )
    return task


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    return client


def statements(ctx: CaptureQueriesContext) -> list[str]:
    control = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT", "BEGIN", "COMMIT")
    return [q["sql"] for q in ctx.captured_queries if not q["sql"].upper().startswith(control)]


def cycle(client, answer: bool = True) -> tuple[list[str], list[str], dict]:
    with CaptureQueriesContext(connection) as leased:
        response = client.get("/api/v1/tasks/next")
    assert response.status_code == 200
    assignment_id = response.json()["id"]
    with CaptureQueriesContext(connection) as submitted:
        response = client.post(
            f"/api/v1/assignments/{assignment_id}/submit",
            {"answer": {"answer": answer}},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"key-{assignment_id}",
        )
    assert response.status_code == 201
    return statements(leased), statements(submitted), response.json()


def test_next_task_and_submit_keep_their_query_counts(worker):
    vote_task(answers_wanted=3)
    next_sql, submit_sql, _ = cycle(token_client(worker))
    assert len(next_sql) == NEXT_TASK_QUERIES[connection.vendor], "\n".join(next_sql)
    assert len(submit_sql) == SUBMIT_QUERIES[connection.vendor], "\n".join(submit_sql)


def test_the_submit_that_closes_a_vote_adds_only_its_decision_and_final_label_writes(worker):
    vote_task()
    next_sql, submit_sql, _ = cycle(token_client(worker))
    assert len(next_sql) == NEXT_TASK_QUERIES[connection.vendor], "\n".join(next_sql)
    assert len(submit_sql) == CLOSING_SUBMIT_QUERIES[connection.vendor], "\n".join(submit_sql)


def test_submit_response_still_carries_the_task_image_and_question(worker):
    task = factories.TaskFactory()
    _, _, body = cycle(token_client(worker))
    assert body["task"]["image"]["ref"] == image_ref(task.image_id)
    assert body["task"]["payload"]["concept"]["wnid"] == task.concept.wnid
    assert body["state"] == "submitted"


def test_a_split_vote_counts_yes_and_no_apart_and_closes_on_the_majority():
    task = factories.TaskFactory(answers_wanted=3)
    answers = [True, False, False]
    for n, answer in enumerate(answers, start=1):
        voter = factories.user_with_roles(f"voter{n}", ("workers",))
        cycle(token_client(voter), answer=answer)
        task.refresh_from_db()
        assert task.answers_count == n
        assert task.state == (TaskState.DONE if n == 3 else TaskState.OPEN)
    assert task.result == {"answer": False, "yes": 1, "no": 2, "rule": "majority of 3"}
    assert Task.objects.filter(state=TaskState.OPEN).count() == 0


def test_the_hand_built_assignment_view_matches_the_serializer_fields(worker):
    task = factories.TaskFactory()
    _, _, body = cycle(token_client(worker))
    assignment = Assignment.objects.select_related("task__image", "task__concept").get(task=task)
    serializer = AssignmentSerializer()
    generic = serializers.ModelSerializer.to_representation(serializer, assignment)
    assert serializer.to_representation(assignment) == generic
    task_view = WorkerTaskSerializer()
    assert task_view.to_representation(assignment.task) == serializers.Serializer.to_representation(
        task_view, assignment.task
    )
    assert body == json.loads(json.dumps(generic))


def test_a_token_of_a_user_without_a_worker_identity_authenticates(organizer):
    """Organizers have tokens but no worker identity: the token query's LEFT JOIN must not fail them."""
    response = token_client(organizer).get("/api/v1/datasets/")
    assert response.status_code == 200


def test_a_vote_recorded_before_the_tally_was_kept_is_still_counted(worker):
    """Open tasks from before the tally lived in `result` have answers but no tally: they are counted once."""
    task = factories.TaskFactory(answers_wanted=3)
    earlier = factories.user_with_roles("earlier", ("workers",)).worker
    Assignment.objects.create(
        task=task, worker=earlier, state="submitted", expires_at=timezone.now(), answer={"answer": False}
    )
    Task.objects.filter(pk=task.pk).update(answers_count=1, result=None)
    cycle(token_client(worker), answer=False)
    task.refresh_from_db()
    assert task.state == TaskState.DONE
    assert task.result == {"answer": False, "yes": 0, "no": 2, "rule": "majority of 3"}


def _task_rows_read(plan: dict) -> int:
    """Rows the plan read from the task table: returned by its scans plus removed by their filters."""
    own = 0
    if plan.get("Relation Name") == Task._meta.db_table:
        own = plan["Actual Rows"] * plan["Actual Loops"] + plan.get("Rows Removed by Filter", 0)
    return own + sum(_task_rows_read(child) for child in plan.get("Plans", []))


@pytest.mark.postgres
def test_a_lease_walks_the_queue_index_instead_of_sorting_every_open_task():
    """With one dataset, none archived and no image excluded, the archived-dataset and excluded-image conditions
    match nothing: written as NOT EXISTS, PostgreSQL planned them as anti-joins it estimated to leave one task
    and sorted every open task on each lease (47 ms on 15,000). Rows read, not time, so a loaded machine cannot
    change the outcome."""
    from annotation.models import Image
    from annotation.queue import statements as lease_sql
    from annotation.queue.contract import LeaseRequest, LeaseTerms

    if connection.vendor != "postgresql":
        pytest.skip("the plan is PostgreSQL's")
    dataset = factories.DatasetFactory()
    concept = factories.ConceptFactory()
    images = Image.objects.bulk_create(
        Image(dataset=dataset, file=f"plan/{i}.jpg", width=64, height=48, sha256=f"{i:064x}", phash="0" * 16)
        for i in range(1500)
    )
    vote_tasks_create(dataset=dataset, concept=concept, images=images, answers_wanted=1)
    worker = factories.user_with_roles("plan-worker", ("workers",)).worker
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        where, params = lease_sql.eligible_where(
            connection,
            worker_id=worker.pk,
            request=LeaseRequest(None, None),
            now=timezone.now(),
            terms=LeaseTerms(),
            draw=None,
        )
        sql = lease_sql._candidate_sql(connection, where, "")
        cursor.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + sql, lease_sql._candidate_params(worker.pk, params)
        )
        plan = cursor.fetchone()[0][0]["Plan"]
    assert _task_rows_read(plan) < 50, json.dumps(plan, indent=1)[:4000]
