"""The image page's and the worker history's endpoints: everything about one image (boxes, votes with voids,
decisions, final labels, review items) and everything a worker did in one dataset (answers per stage, gold,
blocks with reasons), in a number of queries that does not grow with the rows; another dataset's rows and a
worker who never worked in the dataset stay out."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import queue
from annotation.models import Assignment, AssignmentState, Box, BoxState, FinalLabel
from consensus.models import Question, QuestionDecision, QuestionRole, QuestionState, Vote, VoteVoid
from gold.models import BlockAction, ScoreKind, WorkerScore
from review.models import ReviewDecision, ReviewItem
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def image_scene(dataset, organizer):
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    image = factories.ImageFactory(dataset=dataset, original_name="dog.jpg")
    workers = [factories.user_with_roles(f"w{i}", ("workers",)).worker for i in range(4)]
    boxes = [
        Box.objects.create(
            image=image,
            concept=dog,
            x1=k,
            y1=0,
            x2=k + 40,
            y2=30,
            state=BoxState.ACCEPTED,
            drawn_by=workers[k],
        )
        for k in range(3)
    ]
    question = Question.objects.create(
        kind="image_verify",
        dataset=dataset,
        concept=dog,
        image=image,
        role=QuestionRole.PRODUCTION,
        state=QuestionState.ACCEPTED,
        yes_count=3,
        no_count=0,
        p=0.99,
    )
    votes = [Vote.objects.create(question=question, worker=w, answer=True) for w in workers]
    VoteVoid.objects.create(vote=votes[3], reason="worker blocked")
    QuestionDecision.objects.create(
        question=question, decision="accept", p=0.99, yes_count=3, no_count=0, estimator="dynamic"
    )
    FinalLabel.objects.create(dataset=dataset, image=image, concept=dog, present=True, source="consensus")
    item = ReviewItem.objects.create(
        kind="duplicate", dataset=dataset, box_a=boxes[0], box_b=boxes[1], image=image, state="decided"
    )
    reviewer = factories.user_with_roles("rita", ("reviewers",))
    ReviewDecision.objects.create(item=item, reviewer=reviewer, decision="distinct")
    return image


def test_the_image_endpoint_shows_boxes_votes_decisions_and_review(api_client, organizer, image_scene):
    body = (
        api_client(organizer).get(f"/api/v1/datasets/{image_scene.dataset_id}/images/{image_scene.pk}").json()
    )
    assert body["original_name"] == "dog.jpg" and body["file_url"].endswith(f"/images/{image_scene.pk}/file")
    assert [b["drawn_by"] for b in body["boxes"]] == ["w0", "w1", "w2"]
    (question,) = body["questions"]
    assert [v["username"] for v in question["votes"]] == ["w0", "w1", "w2", "w3"]
    assert question["votes"][3]["voided"] == "worker blocked" and question["votes"][0]["voided"] is None
    assert question["decisions"][0]["decision"] == "accept"
    assert body["final_labels"][0]["present"] is True
    (item,) = body["review_items"]
    assert item["decisions"][0]["reviewer"] == "rita"


def test_the_image_endpoint_takes_a_fixed_number_of_queries(
    api_client, organizer, image_scene, django_assert_max_num_queries
):
    client = api_client(organizer)
    # One query per kind of row (3 boxes, 4 votes, a review decision): per-row queries would pass 12.
    with django_assert_max_num_queries(12):
        assert (
            client.get(f"/api/v1/datasets/{image_scene.dataset_id}/images/{image_scene.pk}").status_code
            == 200
        )


def test_an_image_of_another_dataset_is_not_found(api_client, organizer, dataset, other_dataset):
    image = factories.ImageFactory(dataset=other_dataset)
    assert api_client(organizer).get(f"/api/v1/datasets/{dataset.pk}/images/{image.pk}").status_code == 404


def submit(task, worker, minutes_ago, seconds, answer):
    """A submitted answer stored as imported history: counted as a submit counts it."""
    submitted = timezone.now() - timedelta(minutes=minutes_ago)
    (assignment,) = queue.assignments_import(
        [
            Assignment(
                task=task,
                worker=worker,
                state=AssignmentState.SUBMITTED,
                leased_at=submitted - timedelta(seconds=seconds),
                expires_at=submitted + timedelta(minutes=5),
                submitted_at=submitted,
                answer=answer,
            )
        ]
    )
    return assignment


def test_a_workers_history_lists_answers_gold_and_blocks(
    api_client, organizer, dataset, other_dataset, django_assert_max_num_queries
):
    worker = factories.user_with_roles("wendy", ("workers",)).worker
    images = factories.ImageFactory.create_batch(3, dataset=dataset)
    for k, image in enumerate(images):
        submit(factories.TaskFactory(dataset=dataset, image=image), worker, k, 4.0, {"answer": True})
    submit(
        factories.TaskFactory(dataset=other_dataset, image=factories.ImageFactory(dataset=other_dataset)),
        worker,
        0,
        9.0,
        {"answer": False},
    )
    WorkerScore.objects.create(
        worker=worker,
        dataset=dataset,
        kind=ScoreKind.ALL,
        answered=5,
        correct=4,
        mean=0.75,
        lower=0.4,
        p_below=0.2,
    )
    BlockAction.objects.create(worker=worker, dataset=dataset, blocked=True, reason="spam", actor=organizer)
    BlockAction.objects.create(
        worker=worker, dataset=dataset, blocked=False, reason="appeal", actor=organizer
    )
    client = api_client(organizer)
    with django_assert_max_num_queries(10):
        body = client.get(f"/api/v1/datasets/{dataset.pk}/people/{worker.pk}").json()
    assert body["username"] == "wendy"
    assert body["stages"] == [{"stage": "binary_vote", "answers": 3, "worker_seconds": 12.0}]
    assert len(body["recent"]) == 3 and body["recent"][0]["seconds"] == pytest.approx(4.0)
    assert body["recent"][0]["gold_correct"] is None
    assert body["gold_scores"][0]["correct"] == 4
    assert [(b["blocked"], b["reason"]) for b in body["block_actions"]] == [(False, "appeal"), (True, "spam")]


def test_a_worker_who_never_worked_in_the_dataset_is_not_found(api_client, organizer, dataset, other_dataset):
    worker = factories.user_with_roles("stranger", ("workers",)).worker
    submit(
        factories.TaskFactory(dataset=other_dataset, image=factories.ImageFactory(dataset=other_dataset)),
        worker,
        0,
        9.0,
        {"answer": False},
    )
    assert api_client(organizer).get(f"/api/v1/datasets/{dataset.pk}/people/{worker.pk}").status_code == 404


def test_a_workers_history_reads_the_datasets_tasks_only_for_its_latest_answers(
    api_client, organizer, dataset, other_dataset
):
    """The answers per stage come from the worker's counter rows: no statement of the request joins the
    dataset's tasks without a LIMIT (at 10,000,000 tasks the join of every task of the dataset to the worker's
    answers took seconds); the latest answers are found from the worker's own assignments, at most their
    number. Statements, not time, so a loaded machine cannot change the outcome."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    worker = factories.user_with_roles("wendy", ("workers",)).worker
    for k, image in enumerate(factories.ImageFactory.create_batch(3, dataset=dataset)):
        submit(factories.TaskFactory(dataset=dataset, image=image), worker, k, 2.5, {"answer": True})
    image = factories.ImageFactory(dataset=other_dataset)
    submit(factories.TaskFactory(dataset=other_dataset, image=image), worker, 0, 9.0, {"answer": False})
    client = api_client(organizer)
    with CaptureQueriesContext(connection) as captured:
        body = client.get(f"/api/v1/datasets/{dataset.pk}/people/{worker.pk}").json()
    assert body["stages"] == [{"stage": "binary_vote", "answers": 3, "worker_seconds": 7.5}]
    assert len(body["recent"]) == 3
    task_reads = [q["sql"] for q in captured.captured_queries if '"annotation_task"' in q["sql"]]
    assert task_reads, "the latest answers are read with their tasks"
    unbounded = [sql for sql in task_reads if " LIMIT " not in sql]
    assert not unbounded, unbounded
