"""Under the fixed box-question rule, a model's proposal asked QUALITY gets its score band's vote credits
(`boxes.fixed_questions.proposal_policy`, `predictions.score_prior`), calibrated on the crowd's verdicts on the
dataset's earlier proposals of the class: a band of many accepted proposals needs one human yes; without enough
verdicts, or for a drawn box, the rule is unchanged."""

from __future__ import annotations

import pytest

from annotation.models import Box, BoxProvenance, BoxState
from boxes import services as boxes
from consensus.models import Question, QuestionKind
from tests import factories
from tests.annotation.boxhelpers import box_rule_use, image

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fixed(settings):
    box_rule_use(settings, "fixed")


@pytest.fixture
def dog():
    return factories.ConceptFactory(wnid="n02084071", name="dog")


def earlier_verdicts(dataset, concept, score, accepted, rejected=0):
    img = image(dataset)
    for n, state in enumerate([BoxState.ACCEPTED] * accepted + [BoxState.REJECTED] * rejected):
        Box.objects.create(
            image=img,
            concept=concept,
            x1=n,
            y1=0,
            x2=n + 10,
            y2=10,
            state=state,
            provenance=BoxProvenance.MODEL_VERIFIED if state == BoxState.ACCEPTED else BoxProvenance.MODEL,
            score=score,
        )


def asked_rule(dataset, concept, score):
    img = image(dataset)
    boxes.box_job_start(image=img, concept=concept, proposals=[boxes.Proposal(10, 10, 110, 90, score)])
    box = Box.objects.get(image=img)
    return Question.objects.get(kind=QuestionKind.BOX_QUALITY, box=box).rule


def test_a_band_the_crowd_accepted_often_needs_one_human_yes(dataset, dog):
    earlier_verdicts(dataset, dog, 0.95, accepted=40)
    rule = asked_rule(dataset, dog, 0.93)
    assert (rule["yes_needed"], rule["no_needed"]) == (1, 2)


def test_too_few_verdicts_or_a_mixed_band_keep_the_rule(dataset, dog):
    earlier_verdicts(dataset, dog, 0.95, accepted=10)
    earlier_verdicts(dataset, dog, 0.55, accepted=30, rejected=20)
    for score in (0.95, 0.55, 0.15):
        rule = asked_rule(dataset, dog, score)
        assert (rule["yes_needed"], rule["no_needed"]) == (2, 2), score


def test_another_class_verdicts_give_no_credit(dataset, dog):
    cat = factories.ConceptFactory(wnid="n02121808", name="cat")
    earlier_verdicts(dataset, cat, 0.95, accepted=40)
    rule = asked_rule(dataset, dog, 0.95)
    assert (rule["yes_needed"], rule["no_needed"]) == (2, 2)
