"""Verdicts of image-level questions as final labels: a decided image-verification question (by the calibrated
rule or, when it comes back from review, by a reviewer) records its answer for its (image, class) as
`consensus`, a decided plain vote (a fixed majority) as `binary_vote`; a question sent to review, closed
unanswered or reopened withdraws it. Runs in the transaction that decided the question. Questions of
multi-label's `vote` engine (image-verification leaves under a count rule) speak through their labeling."""

from __future__ import annotations

from annotation.final_evidence import BINARY_VOTE, CONSENSUS
from annotation.final_labels import LabelVerdict, final_labels_record
from annotation.queue.sqlrows import Writes

from . import events
from .models import Question, QuestionKind, QuestionState

_PRESENT = {QuestionState.ACCEPTED: True, QuestionState.REJECTED: False}


def question_final_label(question: Question, writes: Writes | None = None) -> None:
    """Record (or withdraw) the final label this question gives its image, as the question now stands: with
    `writes` (the deciding submit's), a new label goes with them."""
    if question.image_id is None or question.box_id is not None:
        return
    if question.kind == QuestionKind.BINARY_VOTE:
        source, ref = BINARY_VOTE, {"task": question.task_id}  # as final_labels_rebuild reads it
    elif question.kind == QuestionKind.IMAGE_VERIFY and not question.rule:
        source, ref = CONSENSUS, {"question": question.pk}
    else:
        return
    final_labels_record(
        dataset_id=question.dataset_id,
        source=source,
        verdicts=[
            LabelVerdict(
                image_id=question.image_id,
                concept_id=question.concept_id,
                present=_PRESENT.get(QuestionState(question.state)),
                yes=question.yes_count,
                no=question.no_count,
                p=question.p,
                ref=ref,
            )
        ],
        writes=writes,
    )


def question_decided(event: events.QuestionDecided) -> None:
    question_final_label(event.question, event.writes)


def connect() -> None:
    events.subscribe(QuestionKind.IMAGE_VERIFY, question_decided)
    events.subscribe(QuestionKind.BINARY_VOTE, question_decided)
