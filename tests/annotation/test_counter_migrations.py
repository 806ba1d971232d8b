"""The migrations that added the per-worker answer counter and the question tally's production figures fill
them from the rows already there, as a deployment over existing data needs: taken back and applied again over
a dataset with answers (one taken back), decided plain votes and a question in review, they hold what a
recount holds."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation import counters, queue
from consensus import binary_vote, tally
from consensus.models import Question, QuestionKind, QuestionRole, QuestionState
from tests import factories
from tests.annotation.boxhelpers import image, workers

BEFORE = [
    ("annotation", "0014_dataset_tally_and_usage_counters"),
    ("consensus", "0010_question_tally_kind_choices"),
]


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_the_migrations_fill_the_worker_tally_and_the_production_figures_from_existing_rows(dataset):
    concept = factories.ConceptFactory(name="dog")
    tasks = binary_vote.vote_tasks_create(
        dataset=dataset, concept=concept, images=[image(dataset) for _ in range(3)], answers_wanted=3
    )
    a, b = workers(2)
    for worker in (a, b):
        for _ in tasks:
            lease = queue.task_lease_next(worker=worker, dataset_id=dataset.pk)
            queue.assignment_submit(assignment=lease, answer={"answer": True}, idempotency_key=f"k{lease.pk}")
    c = workers(1, prefix="c")[0]
    extra = binary_vote.vote_tasks_create(
        dataset=dataset, concept=concept, images=[image(dataset)], answers_wanted=5
    )
    lease = queue.task_lease_next(worker=c, dataset_id=dataset.pk)
    assert lease.task_id == extra[0].pk
    queue.assignment_submit(assignment=lease, answer={"answer": False}, idempotency_key="kc")
    queue.assignment_withdraw(assignment=lease.pk, worker=c)
    Question.objects.create(
        kind=QuestionKind.BINARY_VOTE, dataset=dataset, concept=concept, image=image(dataset),
        role=QuestionRole.PRODUCTION, state=QuestionState.REVIEW, yes_count=2, no_count=3,
    )  # fmt: skip
    counters.counters_recount(dataset.pk)
    workers_before = counters.worker_tally_stored(dataset.pk)
    tally_before = tally.tally_stored(dataset.pk)
    assert workers_before == {a.pk: 3, b.pk: 3, c.pk: 0}
    row = tally_before[(QuestionKind.BINARY_VOTE, concept.pk)]
    assert (row["production_decided"], row["production_votes"], row["production_review"]) == (4, 11, 1)

    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    migrate(BEFORE)  # the counter table and columns are dropped
    migrate(leaves)  # and filled again from the rows

    assert counters.worker_tally_stored(dataset.pk) == workers_before
    assert tally.tally_stored(dataset.pk) == tally_before
