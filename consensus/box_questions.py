"""The consensus engine as the box pipeline's question backend (the default): QUALITY and COVERAGE questions
become consensus `Question`s (calibrated per (question kind, concept), sequential stopping; ILSVRC §3.2.1 and
§3.1.3) and each decision is handed back to `annotation.boxes.on_question_decided`.

A box job asks COVERAGE again after every accepted box, so each coverage question of an (image, concept) gets
the next `round`; the database allows one undecided coverage question per (image, concept) at a time.
"""

from __future__ import annotations

from annotation import boxes, questions
from annotation.models import Box, Dataset, Image
from hierarchy.models import Concept

from . import events
from .models import Question, QuestionKind, Verdict
from .services import Target, questions_create

SUBJECT_KEY = "box_pipeline"
KINDS = (questions.QUALITY, questions.COVERAGE)
_OUTCOME = {Verdict.ACCEPT: True, Verdict.REJECT: False, Verdict.REVIEW: None}
# Verification before drawing, as with annotation's fixed rule: finishing open jobs first keeps few boxes pending.
PRIORITY = 10


class ConsensusBackend:
    name = "consensus"

    def ask(self, question: questions.BinaryQuestion) -> str:
        # `exclude_workers` keeps the drawer(s) off this question, whenever its task is served.
        subject = {SUBJECT_KEY: question.as_dict(), "exclude_workers": list(question.exclude_workers)}
        if question.kind == questions.QUALITY:
            box = Box.objects.select_related("image").get(pk=question.box_id)
            target = Target(image=box.image, box=box, subject=subject)
            kind = QuestionKind.BOX_QUALITY
        else:
            # The caller holds the job row lock, so counting the earlier rounds cannot race.
            earlier = Question.objects.filter(
                dataset_id=question.dataset_id,
                kind=QuestionKind.BOX_COVERAGE,
                concept_id=question.concept_id,
                image_id=question.image_id,
                box__isnull=True,
            ).count()
            image = Image.objects.get(pk=question.image_id)
            target = Target(image=image, subject=subject, round=earlier + 1)
            kind = QuestionKind.BOX_COVERAGE
        (created,) = questions_create(
            dataset=Dataset.objects.get(pk=question.dataset_id),
            kind=kind,
            concept=Concept.objects.get(pk=question.concept_id),
            targets=[target],
            text=question.text,
            priority=PRIORITY,
        )
        return f"question:{created.pk}"


BACKEND = ConsensusBackend()


def on_decided(event: events.QuestionDecided) -> None:
    asked = (event.question.subject or {}).get(SUBJECT_KEY)
    if asked is None:
        return  # a box question some other pipeline asked
    outcome = _OUTCOME[Verdict(event.decision.decision)]
    boxes.on_question_decided(questions.BinaryQuestion.from_dict(asked), outcome)


def shown_box_ids(subject: dict | None) -> list[int]:
    """The accepted boxes a box question shows besides the judged one (the worker page draws them)."""
    asked = (subject or {}).get(SUBJECT_KEY) or {}
    return [int(b) for b in asked.get("box_ids", ())]


def connect(kinds: tuple[str, ...] = KINDS) -> None:
    """Take over the box pipeline's questions (called from `ConsensusConfig.ready` unless the deployment chose
    annotation's fixed rule)."""
    questions.register(BACKEND, kinds=kinds)
    for kind in kinds:
        events.subscribe(kind, on_decided)


def disconnect(kinds: tuple[str, ...] = KINDS) -> None:
    questions.unregister(kinds)
    for kind in kinds:
        events.unsubscribe(kind, on_decided)
