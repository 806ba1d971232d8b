"""Settling at the cap spends the crowd's own budget (issue 33): the expected errors of a concept's decided set
are summed over the questions the crowd decided. A question a reviewer decided carries the crowd's split P, not
the risk of its label, and must not spend the budget of the next capped question."""

from __future__ import annotations

import pytest

from consensus.creation import Target, questions_create
from consensus.engine import decided_so_far, question_settle
from consensus.models import ConsensusSettings, Question, QuestionDecision, QuestionKind, QuestionState
from consensus.stopping import Decision
from tests.consensus.conftest import make_images

pytestmark = pytest.mark.django_db


def _decide(question: Question, state: str, p: float, history: list[tuple[str, object]]) -> None:
    for decision, reviewer in history:
        QuestionDecision.objects.create(
            question=question,
            decision=decision,
            p=p,
            yes_count=5,
            no_count=5,
            estimator="weighted",
            reviewer=reviewer,
        )
    Question.objects.filter(pk=question.pk).update(state=state, p=p)


def test_questions_a_reviewer_decided_do_not_spend_the_budget_of_the_next_capped_question(
    dataset, concept, organizer
):
    settings = ConsensusSettings.objects.create(dataset=dataset, extension_cap=0)
    by_crowd, by_reviewer, reviewed_then_crowd, capped = questions_create(
        dataset=dataset,
        kind=QuestionKind.IMAGE_VERIFY,
        concept=concept,
        targets=[Target(image=img) for img in make_images(dataset, 4)],
    )
    _decide(by_crowd, QuestionState.REJECTED, 0.001, [("reject", None)])
    # A split the crowd could not settle, rejected by a person: its P says nothing of the label's risk.
    _decide(by_reviewer, QuestionState.REJECTED, 0.53, [("review", None), ("reject", organizer)])
    # Reviewed, reopened when a voter was blocked, then decided by the crowd: the crowd's decision counts.
    _decide(
        reviewed_then_crowd,
        QuestionState.ACCEPTED,
        0.9995,
        [("review", None), ("accept", organizer), ("reopened", None), ("accept", None)],
    )

    so_far = decided_so_far(capped)
    assert (so_far.accepted, so_far.rejected) == (1, 1)
    assert so_far.accepted_risk == pytest.approx(0.0005)
    assert so_far.rejected_risk == pytest.approx(0.001)
    # Counted with the reviewer's question, the reject budget (0.02) was spent: (0.001 + 0.53 + 0.004) / 3.
    assert question_settle(capped, 0.004, settings) == Decision.REJECT
    assert question_settle(capped, 0.5, settings) == Decision.REVIEW
