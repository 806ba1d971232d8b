"""A reviewer's verdict against a clear lean of the crowd is acted on only when a second decision agrees (issue 13:
a reviewer's slip of the key accepted a question the crowd had rejected 4 yes / 8 no, P 0.098): the first
decision is recorded as held and the item comes back with what was held; a verdict with the crowd acts at once."""

from __future__ import annotations

import pytest

from consensus.models import ConsensusSettings, Question, QuestionState
from review import decisions, leasing
from review.models import Decision, ItemState, ReviewDecision, ReviewItem
from review.serializers import ReviewItemSerializer
from tests import factories
from tests.review.test_pipelines import lease_and_decide, verify_question_at_cap

pytestmark = pytest.mark.django_db


@pytest.fixture
def concept():
    return factories.ConceptFactory(wnid="n02084071", name="dog")


@pytest.fixture
def leaning(dataset, concept):
    """A question in review whose crowd leaned clearly towards "no" (P(yes) 0.05)."""
    ConsensusSettings.objects.create(dataset=dataset, vote_cap=2, calibration_votes=2, extension_cap=0)
    question = verify_question_at_cap(dataset, concept)
    Question.objects.filter(pk=question.pk).update(p=0.05)
    return question


def test_an_accept_against_the_crowd_is_held_until_a_second_decision_confirms_it(leaning, reviewer, dataset):
    item = lease_and_decide(reviewer, Decision.ACCEPT, dataset)
    assert item.state == ItemState.OPEN, "back in the queue for a second decision"
    assert Question.objects.get(pk=leaning.pk).state == QuestionState.REVIEW, "nothing acted on yet"
    held = ReviewDecision.objects.get(item=item).after["held"]
    assert (held["reason"], held["decision"], held["p"]) == ("against_crowd", "accept", 0.05)

    again = leasing.review_lease_next(reviewer=reviewer, dataset_id=dataset.pk)
    assert again.pk == item.pk, "the same reviewer may confirm (a one-reviewer team is not stuck)"
    context = ReviewItemSerializer(again).data["context"]
    assert context["held"]["decision"] == "accept" and "against the crowd" in context["held"]["message"]
    decisions.review_decide(item=again, reviewer=reviewer, decision=Decision.ACCEPT)
    assert Question.objects.get(pk=leaning.pk).state == QuestionState.ACCEPTED
    assert ReviewItem.objects.get(pk=item.pk).state == ItemState.DECIDED


def test_a_second_decision_with_the_crowd_overrules_the_held_one(leaning, reviewer, dataset):
    lease_and_decide(reviewer, Decision.ACCEPT, dataset)
    item = lease_and_decide(reviewer, Decision.REJECT, dataset)
    assert Question.objects.get(pk=leaning.pk).state == QuestionState.REJECTED
    assert item.state == ItemState.DECIDED
    assert [d.decision for d in ReviewDecision.objects.filter(item=item)] == ["accept", "reject"], (
        "both decisions stay on record"
    )


def test_a_verdict_with_the_crowd_acts_at_once(leaning, reviewer, dataset):
    lease_and_decide(reviewer, Decision.REJECT, dataset)
    assert Question.objects.get(pk=leaning.pk).state == QuestionState.REJECTED
    assert leasing.review_lease_next(reviewer=reviewer) is None


def test_an_accept_on_a_split_question_acts_at_once(dataset, concept, reviewer):
    ConsensusSettings.objects.create(dataset=dataset, vote_cap=2, calibration_votes=2, extension_cap=0)
    question = verify_question_at_cap(dataset, concept)
    Question.objects.filter(pk=question.pk).update(p=0.45)
    lease_and_decide(reviewer, Decision.ACCEPT, dataset)
    assert Question.objects.get(pk=question.pk).state == QuestionState.ACCEPTED
