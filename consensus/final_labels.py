"""Image verification's verdicts as final labels: a decided image-verification question (by the calibrated rule
or, when it comes back from review, by a reviewer) records its answer for its (image, class); a question sent to
review or reopened withdraws it. Runs in the transaction that decided the question."""

from __future__ import annotations

from annotation.final_evidence import CONSENSUS
from annotation.final_labels import LabelVerdict, final_labels_record

from . import events
from .models import Question, QuestionKind, QuestionState

_PRESENT = {QuestionState.ACCEPTED: True, QuestionState.REJECTED: False}


def question_final_label(question: Question) -> None:
    """Record (or withdraw) the final label this question gives its image, as the question now stands."""
    if question.kind != QuestionKind.IMAGE_VERIFY or question.image_id is None or question.box_id is not None:
        return
    final_labels_record(
        dataset_id=question.dataset_id,
        source=CONSENSUS,
        verdicts=[
            LabelVerdict(
                image_id=question.image_id,
                concept_id=question.concept_id,
                present=_PRESENT.get(QuestionState(question.state)),
                yes=question.yes_count,
                no=question.no_count,
                p=question.p,
                ref={"question": question.pk},
            )
        ],
    )


def question_decided(event: events.QuestionDecided) -> None:
    question_final_label(event.question)


def connect() -> None:
    events.subscribe(QuestionKind.IMAGE_VERIFY, question_decided)
