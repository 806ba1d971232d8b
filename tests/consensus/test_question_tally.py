"""The question tally's decided production questions, their votes and those in review (what the organizer's
quality page reads) follow every change to a question: decided by its votes, its votes recounted by a void
while it stays decided, reopened by a void, an answer taken back, and a reviewer's verdict; each step equals
a recount from the questions."""

from __future__ import annotations

import pytest

from annotation import queue
from annotation.counters import counters_recount
from consensus import binary_vote, tally
from consensus.models import Question, QuestionKind, QuestionRole, QuestionState, Vote
from consensus.verdicts import question_review_decide
from consensus.voiding import votes_void
from tests import factories
from tests.annotation.boxhelpers import image, workers

pytestmark = pytest.mark.django_db


def production(dataset, concept) -> dict[str, int]:
    assert tally.tally_stored(dataset.pk) == tally.tally_expected(dataset.pk)
    row = tally.tally_stored(dataset.pk).get((QuestionKind.BINARY_VOTE, concept.pk), {})
    return {k: row.get(f"production_{k}", 0) for k in ("decided", "votes", "review")}


def give(worker, task, value: bool):
    lease = queue.task_lease_next(worker=worker, dataset_id=task.dataset_id)
    assert lease is not None and lease.task_id == task.pk
    queue.assignment_submit(assignment=lease, answer={"answer": value}, idempotency_key=f"k{lease.pk}")
    return lease


def test_the_production_figures_follow_decisions_voids_undos_and_reviews(dataset, organizer):
    concept = factories.ConceptFactory(name="dog")
    two, three, one, five = (
        binary_vote.vote_tasks_create(
            dataset=dataset, concept=concept, images=[image(dataset)], answers_wanted=n
        )[0]
        for n in (3, 3, 1, 5)
    )
    a, b, c = workers(3)
    assert Question.objects.get(task=two).role == QuestionRole.PRODUCTION
    give(a, two, True)
    assert production(dataset, concept) == {"decided": 0, "votes": 0, "review": 0}, "an open question"
    give(b, two, True)  # a majority of 3: decided at two votes
    give(a, three, True)
    give(b, three, False)
    give(c, three, True)
    give(a, one, True)
    assert production(dataset, concept) == {"decided": 3, "votes": 6, "review": 0}

    dissent = Vote.objects.get(question__task=three, answer=False)
    report = votes_void(votes=[dissent.pk], reason="worker blocked")
    assert report.confirmed == [Question.objects.get(task=three).pk]
    assert production(dataset, concept) == {"decided": 3, "votes": 5, "review": 0}, (
        "still decided, one vote less"
    )
    report = votes_void(
        votes=list(Vote.objects.filter(question__task=one).values_list("pk", flat=True)), reason="x"
    )
    assert report.reopened == [Question.objects.get(task=one).pk]
    assert production(dataset, concept) == {"decided": 2, "votes": 4, "review": 0}, "reopened"

    taken = give(a, five, True)
    queue.assignment_withdraw(assignment=taken.pk, worker=a)  # an open question's vote: nothing decided moves
    assert production(dataset, concept) == {"decided": 2, "votes": 4, "review": 0}

    waiting = Question.objects.create(
        kind=QuestionKind.BINARY_VOTE, dataset=dataset, concept=concept, image=image(dataset),
        role=QuestionRole.PRODUCTION, state=QuestionState.REVIEW, yes_count=4, no_count=4,
    )  # fmt: skip
    counters_recount(dataset.pk)  # made around the services
    assert production(dataset, concept) == {"decided": 3, "votes": 12, "review": 1}
    question_review_decide(question_id=waiting.pk, accept=True, reviewer=organizer)
    assert production(dataset, concept) == {"decided": 3, "votes": 12, "review": 0}, "decided, out of review"
    assert counters_recount(dataset.pk) == 0
