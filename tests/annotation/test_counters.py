"""The per-dataset counters (box tally, usage per stage and concept, answers per worker) stay equal to a recount from the facts:
after a simulated crowd's run, after review decisions and their undo, when a submit rolls back, and under
concurrent writers on PostgreSQL; `counters_recount` repairs them."""

from __future__ import annotations

import io
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.utils import timezone

from annotation import counters, queue
from annotation.models import (
    Assignment,
    AssignmentState,
    Box,
    BoxState,
    Dataset,
    DatasetTally,
    Task,
    UsageCounter,
)
from consensus import tally as question_tally
from consensus.models import Question
from review import decisions, leasing, scan
from review.models import Decision, ReviewKind
from tests import factories
from tests.threads import in_thread


def assert_counters_match_a_recount(dataset_id: int) -> None:
    assert counters.counters_stored(dataset_id) == counters.counters_expected(dataset_id)
    assert counters.worker_tally_stored(dataset_id) == counters.worker_tally_expected(dataset_id)
    assert question_tally.tally_stored(dataset_id) == question_tally.tally_expected(dataset_id)


# transaction=True: the consensus engine rebuilds calibration tables on commit, as in production.
@pytest.mark.django_db(transaction=True)
def test_after_a_simulated_boxes_run_every_counter_equals_a_recount_from_boxes_tasks_and_answers():
    out = io.StringIO()
    call_command(
        "simulate", scenario="boxes", images=4, workers=8, seed=2, synsets=4, stdout=out, no_progress=True
    )
    dataset = Dataset.objects.order_by("-id").first()
    tally, usage = counters.counters_stored(dataset.pk)
    assert tally["images"] == 4, "every uploaded image is counted"
    assert tally["boxes_drawn"] > 0 and tally["boxes_accepted"] > 0, "the run drew and accepted boxes"
    assert {stage for stage, _ in usage} >= {"box_draw", "box_quality"}, usage
    assert (
        sum(u["answers"] for u in usage.values())
        == Assignment.objects.filter(task__dataset=dataset, state=AssignmentState.SUBMITTED).count()
    )
    assert all(u["worker_microseconds"] > 0 for u in usage.values() if u["answers"])
    assert_counters_match_a_recount(dataset.pk)
    assert counters.counters_recount(dataset.pk) == 0, "nothing to correct"


# transaction=True: as above.
@pytest.mark.django_db(transaction=True)
def test_after_a_simulated_verification_run_the_question_tally_equals_a_recount():
    call_command(
        "simulate", scenario="verify", images=30, workers=12, synsets=2, seed=3, stdout=io.StringIO(),
        no_progress=True,
    )  # fmt: skip
    dataset = Dataset.objects.order_by("-id").first()
    questions = question_tally.tally_stored(dataset.pk)
    assert {kind for kind, _ in questions} == {"image_verify"}, questions
    assert (
        sum(q["questions"] for q in questions.values())
        == Question.objects.filter(dataset=dataset).count()
        > 0
    )
    assert sum(q["decided"] for q in questions.values()) > 0
    assert_counters_match_a_recount(dataset.pk)
    assert counters.counters_recount(dataset.pk) == 0, "nothing to correct"


@pytest.mark.django_db
def test_review_decisions_and_their_undo_keep_the_accepted_box_count(dataset, organizer):
    reviewer = factories.user_with_roles("reviewer", ("reviewers",))
    dog = factories.ConceptFactory(name="dog")
    img = factories.ImageFactory(dataset=dataset, width=100, height=100)
    for h in (50, 48):
        Box.objects.create(image=img, concept=dog, x1=0, y1=0, x2=50, y2=h, state=BoxState.ACCEPTED)
    counters.counters_recount(dataset.pk)  # the boxes were made by a factory, around the services
    assert DatasetTally.objects.get(dataset=dataset).boxes_accepted == 2
    scan.overlaps_scan(dataset)
    item = leasing.review_lease_next(reviewer=reviewer, kinds=[ReviewKind.DUPLICATE])
    row = decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.DUPLICATE_KEEP_A)
    assert DatasetTally.objects.get(dataset=dataset).boxes_accepted == 1
    assert_counters_match_a_recount(dataset.pk)
    decisions.review_undo(decision=row, organizer=organizer, reason="same dog after all")
    assert DatasetTally.objects.get(dataset=dataset).boxes_accepted == 2
    assert_counters_match_a_recount(dataset.pk)


@pytest.mark.django_db
def test_a_rolled_back_submit_leaves_the_counters_as_they_were(dataset):
    worker = factories.user_with_roles("w1", ("workers",)).worker
    task = factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))
    before = counters.counters_stored(dataset.pk)
    assignment = queue.task_lease_next(worker=worker)
    with pytest.raises(RuntimeError), transaction.atomic():
        queue.assignment_submit(assignment=assignment, answer={"answer": True}, idempotency_key="k-1")
        assert counters.counters_stored(dataset.pk) != before
        raise RuntimeError("the caller's transaction fails after the submit")
    assert counters.counters_stored(dataset.pk) == before
    queue.assignment_submit(assignment=assignment, answer={"answer": True}, idempotency_key="k-1")
    queue.assignment_submit(assignment=assignment, answer={"answer": True}, idempotency_key="k-1")  # a retry
    (row,) = UsageCounter.objects.filter(dataset=dataset)
    assert (row.stage, row.concept_id, row.tasks, row.answers) == ("binary_vote", task.concept_id, 1, 1)
    assert_counters_match_a_recount(dataset.pk)


@pytest.mark.django_db
def test_imported_history_is_counted_with_its_worker_time(dataset):
    worker = factories.user_with_roles("w1", ("workers",)).worker
    other = factories.user_with_roles("w2", ("workers",)).worker
    task = factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))
    now = timezone.now()
    queue.assignments_import(
        [
            Assignment(task=task, worker=worker, state=AssignmentState.SUBMITTED, expires_at=now,
                       leased_at=now - timedelta(seconds=7, microseconds=3), submitted_at=now),
            Assignment(task=task, worker=other, state=AssignmentState.RELEASED, expires_at=now,
                       leased_at=now - timedelta(seconds=2)),
        ]
    )  # fmt: skip
    row = UsageCounter.objects.get(dataset=dataset)
    assert (row.answers, row.worker_microseconds) == (1, 7_000_003), "a released lease is no answer"
    assert_counters_match_a_recount(dataset.pk)


@pytest.mark.django_db
def test_counters_recount_command_repairs_wrong_counters_and_names_a_missing_dataset(dataset):
    task = factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))
    UsageCounter.objects.filter(dataset=dataset).update(tasks=40, answers=3)
    DatasetTally.objects.filter(dataset=dataset).update(images=9, boxes_drawn=5)
    out = io.StringIO()
    call_command("counters_recount", dataset=[dataset.pk], stdout=out)
    assert f"dataset {dataset.pk} ({dataset.name}): 2 counter row(s) corrected" in out.getvalue()
    assert counters.counters_stored(dataset.pk) == (
        {"images": 1, "boxes_drawn": 0, "boxes_accepted": 0},
        {("binary_vote", task.concept_id): {"tasks": 1, "answers": 0, "worker_microseconds": 0}},
    )
    with pytest.raises(CommandError, match="no dataset with id 987654"):
        call_command("counters_recount", dataset=[dataset.pk, 987654])


THREADS = 12
TASKS_EACH = 10


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_task_creation_and_submits_add_up_exactly_on_postgresql():
    """Twelve threads each create ten tasks of one (stage, concept), then drain the queue: the counter rows are
    created once (the losers of the insert race update instead) and every adding UPDATE is counted."""
    dataset = Dataset.objects.create(name="counters-concurrency")
    concept = factories.ConceptFactory(wnid="n02084071")
    # One image per task: each plain vote becomes its own consensus question on its first answer (a question
    # per image and concept; queued by `vote_tasks_create` they would have theirs already).
    images = [factories.ImageFactory(dataset=dataset) for _ in range(THREADS * TASKS_EACH)]
    workers = [factories.user_with_roles(f"w{i}", ("workers",)).worker for i in range(THREADS)]
    start = threading.Barrier(THREADS)

    @in_thread
    def create_and_drain(n_worker) -> int:
        n, worker = n_worker
        start.wait()
        queue.tasks_create(
            Task(kind="binary_vote", dataset=dataset, image=image, concept=concept, answers_wanted=1)
            for image in images[n * TASKS_EACH : (n + 1) * TASKS_EACH]
        )
        done = 0
        while (assignment := queue.task_lease_next(worker=worker)) is not None:
            queue.assignment_submit(
                assignment=assignment, answer={"answer": True}, idempotency_key=f"k{assignment.pk}"
            )
            done += 1
        return done

    with ThreadPoolExecutor(THREADS) as pool:
        submitted = sum(pool.map(create_and_drain, enumerate(workers)))

    (row,) = UsageCounter.objects.filter(dataset=dataset)
    assert row.tasks == THREADS * TASKS_EACH
    assert row.answers == submitted == Assignment.objects.filter(state=AssignmentState.SUBMITTED).count()
    assert_counters_match_a_recount(dataset.pk)


@pytest.mark.django_db
def test_counters_held_in_a_block_are_summed_per_row_and_written_last_in_table_then_key_order():
    # The lock order (docs/architecture.md): whatever order a transaction's pipelines add in, its counter rows
    # are locked at the end, by table and then key, so two transactions never hold them crosswise.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    first, second = factories.DatasetFactory(), factories.DatasetFactory()
    for d in (first, second):
        DatasetTally.objects.update_or_create(dataset=d, defaults={"images": 0})
        UsageCounter.objects.create(dataset=d, stage="question", concept=None)
    usage = {"stage": "question", "concept_id": None}
    with transaction.atomic(), CaptureQueriesContext(connection) as captured:
        with counters.held():
            counters.counter_add(UsageCounter, {"dataset_id": second.pk, **usage}, {"tasks": 1})
            counters.counter_add(DatasetTally, {"dataset_id": second.pk}, {"images": 1})
            counters.counter_add(DatasetTally, {"dataset_id": first.pk}, {"images": 2})
            counters.counter_add(DatasetTally, {"dataset_id": second.pk}, {"images": 3})
            counters.counter_add(UsageCounter, {"dataset_id": first.pk, **usage}, {"tasks": 5})
            assert captured.captured_queries == []  # nothing written yet
    updates = [q["sql"] for q in captured.captured_queries if q["sql"].lstrip().upper().startswith("UPDATE")]
    tally, usage_table = "annotation_datasettally", "annotation_usagecounter"
    assert [tally if tally in u else usage_table for u in updates] == [tally, tally, usage_table, usage_table]
    assert [DatasetTally.objects.get(dataset=d).images for d in (first, second)] == [2, 4]
    assert [UsageCounter.objects.get(dataset=d).tasks for d in (first, second)] == [5, 1]
    # Within a table, by key: the first dataset's row before the second's.
    keyed = [int(re.search(r"dataset_id\W* = (\d+)", u).group(1)) for u in updates]
    assert keyed == [first.pk, second.pk, first.pk, second.pk]


@pytest.mark.django_db
def test_counters_held_in_a_block_that_fails_are_dropped():
    dataset = factories.DatasetFactory()
    DatasetTally.objects.update_or_create(dataset=dataset, defaults={"images": 0})
    with pytest.raises(RuntimeError), transaction.atomic(), counters.held():
        counters.images_counted(dataset.pk, 3)
        raise RuntimeError("the submit failed")
    counters.images_counted(dataset.pk, 1)  # outside a block: at once
    assert DatasetTally.objects.get(dataset=dataset).images == 1
