"""The consensus engine as the box pipeline's question backend: a box-quality question becomes a consensus
`Question` (calibrated per (question kind, concept), sequential stopping) and its decision is handed back to
`annotation.boxes.on_question_decided`.

Only QUALITY is taken over. COVERAGE stays with annotation's default rule: a job asks it again after every
accepted box about the same (image, concept), which consensus's one-question-per-(image, concept) constraint
does not allow for box-less questions.
"""

from __future__ import annotations

from annotation import boxes, questions
from annotation.models import Box, Dataset
from hierarchy.models import Concept

from . import events
from .models import QuestionKind, Verdict
from .services import Target, questions_create

SUBJECT_KEY = "box_pipeline"
KINDS = (questions.QUALITY,)
_OUTCOME = {Verdict.ACCEPT: True, Verdict.REJECT: False, Verdict.REVIEW: None}


class ConsensusBackend:
    name = "consensus"

    def ask(self, question: questions.BinaryQuestion) -> str:
        box = Box.objects.select_related("image").get(pk=question.box_id)
        (created,) = questions_create(
            dataset=Dataset.objects.get(pk=question.dataset_id),
            kind=QuestionKind.BOX_QUALITY,
            concept=Concept.objects.get(pk=question.concept_id),
            targets=[
                Target(
                    image=box.image,
                    box=box,
                    # `exclude_workers` keeps the drawer off this question, whenever its task is served.
                    subject={
                        SUBJECT_KEY: question.as_dict(),
                        "exclude_workers": list(question.exclude_workers),
                    },
                )
            ],
            text=question.text,
        )
        return f"question:{created.pk}"


BACKEND = ConsensusBackend()


def on_decided(event: events.QuestionDecided) -> None:
    asked = (event.question.subject or {}).get(SUBJECT_KEY)
    if asked is None:
        return  # a box question some other pipeline asked
    outcome = _OUTCOME[Verdict(event.decision.decision)]
    boxes.on_question_decided(questions.BinaryQuestion.from_dict(asked), outcome)


def connect() -> None:
    """Take over the box pipeline's QUALITY questions (called from `ConsensusConfig.ready`)."""
    questions.register(BACKEND, kinds=KINDS)
    events.subscribe(QuestionKind.BOX_QUALITY, on_decided)


def disconnect() -> None:
    questions.unregister(KINDS)
    events.unsubscribe(QuestionKind.BOX_QUALITY, on_decided)
