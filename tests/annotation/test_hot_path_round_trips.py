"""Round trips to PostgreSQL per request of the worker's hot path (next task, submit), every statement counted:
transaction control (BEGIN, SAVEPOINT, COMMIT) is a round trip too, and on a loaded two-core machine the load
run (bench/load.py) spends its time in them. Pinned as upper bounds at the figures measured when they were cut,
for the plain vote kind and the verification `question` kind (with and without gold in the dataset), so a
change that adds a round trip shows here. The health check between requests adds none
(tests/config/test_pg_health_check.py)."""

from __future__ import annotations

import traceback
from contextlib import ExitStack, contextmanager
from unittest import mock

import pytest
from django.db import connection
from django.db.models.sql import compiler
from django.test.utils import CaptureQueriesContext

from consensus.models import Question, QuestionKind, QuestionState
from gold.items import GoldSpec, gold_items_create
from gold.models import GoldSettings
from tests import factories
from tests.annotation.test_queue_queries import token_client, vote_task
from tests.conftest import leased_task
from tests.gold.conftest import make_images, make_workers, production_questions

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

# Next task: token (with user and worker), the gold policy's one-statement context, the lease statement (which
# selects the task's example images too; a question that shows no boxes needs no read of its question row for
# the payload).
VOTE_NEXT = 3
QUESTION_NEXT = 3
# With gold in the dataset the policy looks its candidates up (settings, scores, the next task, the lease count,
# the candidates) and the side not taken is looked up too, so gold and normal leases cost the same.
QUESTION_NEXT_WITH_GOLD = 10
# Submit: token, BEGIN, lock the task and read the assignment, store the answer; a plain vote is a consensus
# question with a fixed-majority rule, so it locks its question and inserts the vote (no savepoint); then every
# write the answer causes (the verdict with the counts, the decision row, its final label as a new pair, the
# question tally, the task, the usage and worker counters) goes in one statement (the submit's
# annotation.queue.sqlrows.Writes, sent once); COMMIT. A question that was never in review has no review item
# to clear, so none is looked for.
VOTE_SUBMIT_CLOSING = 8
# A vote on a question: lock the question (its dataset's settings joined), insert the vote (no savepoint), the
# calibration table in use; then P with the counts (asking more) or the verdict, its decision row, the final
# label and the question tally of the organizer's progress page, sent with the task and the counters in one
# statement (the hierarchy subscriber of the decision reads its image's labeling in between, and sends the
# writes only when it moves a labeling on; issue 32 made that one statement instead of two); review's
# subscriber needs nothing for a question that was never in review.
QUESTION_SUBMIT_ASKING_MORE = 9
QUESTION_SUBMIT_DECIDING = 10
# Submit with next=true (the worker page's): the closing vote's submit and the next task's lease in one request
# and transaction, so one token lookup instead of two; the lease statement itself keeps the new lease's id on
# the submitted assignment (a retry hands that lease back), so that costs no statement of its own.
VOTE_SUBMIT_CHAINED = VOTE_SUBMIT_CLOSING + (VOTE_NEXT - 1)


def next_and_submit(client) -> tuple[list[str], list[str], dict]:
    with CaptureQueriesContext(connection) as leased:
        response = client.get("/api/v1/tasks/next")
    assert response.status_code == 200, response.content
    assignment = response.json()
    with CaptureQueriesContext(connection) as submitted:
        response = client.post(
            f"/api/v1/assignments/{assignment['id']}/submit",
            {"answer": {"answer": True}},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"key-{assignment['id']}",
        )
    assert response.status_code == 201, response.content
    sql = lambda ctx: [q["sql"] for q in ctx.captured_queries]  # noqa: E731
    return sql(leased), sql(submitted), assignment


def within(statements: list[str], bound: int) -> bool:
    return len(statements) <= bound


def test_a_plain_vote_cycle_stays_within_its_round_trips(worker):
    vote_task(answers_wanted=1)  # queued as every caller queues one: its consensus question made with it
    leased, submitted, _ = next_and_submit(token_client(worker))
    assert within(leased, VOTE_NEXT), "\n".join(leased)
    assert within(submitted, VOTE_SUBMIT_CLOSING), "\n".join(submitted)
    assert not [s for s in submitted if s.upper().startswith("SAVEPOINT")], "\n".join(submitted)


def test_a_vote_answered_with_the_next_lease_costs_one_token_lookup_less_than_two_requests(worker):
    vote_task(answers_wanted=1)
    vote_task(answers_wanted=1)
    client = token_client(worker)
    assignment = client.get("/api/v1/tasks/next").json()
    with CaptureQueriesContext(connection) as chained:
        response = client.post(
            f"/api/v1/assignments/{assignment['id']}/submit?next=true",
            {"answer": {"answer": True}},
            format="json",
            HTTP_IDEMPOTENCY_KEY="chained",
        )
    assert response.status_code == 201, response.content
    assert response.json()["next"] is not None
    sql = [q["sql"] for q in chained.captured_queries]
    assert within(sql, VOTE_SUBMIT_CHAINED), "\n".join(sql)
    assert not [s for s in sql if s.upper().startswith("SAVEPOINT")], "\n".join(sql)


@pytest.fixture
def concept(db):
    return factories.ConceptFactory(wnid="n02123045", name="tabby cat", gloss="a cat with a striped coat")


def test_a_verification_question_cycle_stays_within_its_round_trips(dataset, concept):
    production_questions(dataset, concept, make_images(dataset, 1), vote_cap=15)
    question = Question.objects.get()
    rounds = []
    for worker in make_workers(3):
        rounds.append(next_and_submit(token_client(worker.user)))
    question.refresh_from_db()
    assert question.state == QuestionState.ACCEPTED  # three yes votes decide it under the installed table
    for leased, _, _ in rounds:
        assert within(leased, QUESTION_NEXT), "\n".join(leased)
    for _, submitted, _ in rounds[:2]:
        assert within(submitted, QUESTION_SUBMIT_ASKING_MORE), "\n".join(submitted)
    assert within(rounds[2][1], QUESTION_SUBMIT_DECIDING), "\n".join(rounds[2][1])
    for _, submitted, _ in rounds:
        assert not [s for s in submitted if s.upper().startswith("SAVEPOINT")], "\n".join(submitted)


def test_a_lease_in_a_dataset_with_gold_stays_within_its_round_trips(dataset, concept):
    images = make_images(dataset, 20)
    production_questions(dataset, concept, images[:10], vote_cap=15)
    gold_items_create(
        dataset=dataset,
        specs=[
            GoldSpec(kind=QuestionKind.IMAGE_VERIFY, concept=concept, image=image, answer=True)
            for image in images[10:]
        ],
    )
    GoldSettings.objects.create(dataset=dataset, rate=0.5, qualification_size=0, qualification_pass=0)
    client = token_client(make_workers(1)[0].user)
    for _ in range(6):
        leased, _, _ = next_and_submit(client)
        assert within(leased, QUESTION_NEXT_WITH_GOLD), "\n".join(leased)


@contextmanager
def orm_statements():
    """The statements the ORM compiles meanwhile, each as (compiler class, table, whether annotation.counters
    issued it): what the hand-written, prepared statements of the hot path spare."""
    compiled: list[tuple[str, str, bool]] = []
    depth = [0]

    def counting(original):
        def execute_sql(self, *args, **kwargs):
            if depth[0] == 0:
                by_counters = any(
                    f.filename.endswith("annotation/counters.py") for f in traceback.extract_stack()
                )
                compiled.append((type(self).__name__, self.query.model._meta.db_table, by_counters))
            depth[0] += 1
            try:
                return original(self, *args, **kwargs)
            finally:
                depth[0] -= 1

        return execute_sql

    classes = (compiler.SQLCompiler, compiler.SQLInsertCompiler, compiler.SQLUpdateCompiler)
    with ExitStack() as stack:
        for cls in classes:
            stack.enter_context(mock.patch.object(cls, "execute_sql", counting(cls.__dict__["execute_sql"])))
        yield compiled


def test_the_vote_path_compiles_no_orm_statement_but_the_counters(worker):
    # Every other statement of a closing plain vote (the question's lock, the vote, the verdict, the decision
    # row) is written by hand and prepared: compiled by the ORM they cost more Python than PostgreSQL spends.
    task = vote_task(answers_wanted=1)
    client = token_client(worker)
    response = client.get("/api/v1/tasks/next")
    assert response.status_code == 200 and leased_task(response.json()).pk == task.pk
    with orm_statements() as compiled:
        response = client.post(
            f"/api/v1/assignments/{response.json()['id']}/submit",
            {"answer": {"answer": True}},
            format="json",
            HTTP_IDEMPOTENCY_KEY="orm-count",
        )
    assert response.status_code == 201, response.content
    assert [c for c in compiled if not c[2]] == [], compiled
