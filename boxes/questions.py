"""The box pipeline's questions through the consensus engine: QUALITY and COVERAGE questions become consensus
`Question`s, calibrated per (question kind, concept) with sequential stopping by default (ILSVRC §3.2.1 and
§3.1.3), or carrying the fixed first-to-k rule of `boxes.fixed_questions` when the deployment chose it
(`CROWDLABEL_BOX_QUESTION_BACKEND=fixed`, read by `backend_chosen` each time a job asks). Either way each
decision is handed back to `boxes.services.on_question_decided`.

A box job asks COVERAGE again after every accepted box, so each coverage question of an (image, concept) gets
the next `round`; the database allows one undecided coverage question per (image, concept) at a time.
"""

from __future__ import annotations

from django.conf import settings

from annotation import questions
from annotation.models import Box, Dataset, Image
from annotation.questions import SUBJECT_KEY
from consensus import events
from consensus.calibration import prior_table
from consensus.count_questions import count_questions_create
from consensus.creation import TASK_KIND, Target, questions_create
from consensus.estimates import table_cap, table_newest
from consensus.models import CalibrationTable, Question, QuestionKind, Verdict
from consensus.voiding import round_superseded
from hierarchy.models import Concept

from . import services

KINDS = questions.KINDS
# The deployment's choice (`CROWDLABEL_BOX_QUESTION_BACKEND`): the calibrated rule, or anything else for the fixed
# first-to-k rule of `boxes.fixed_questions`.
CONSENSUS = "consensus"
_OUTCOME = {Verdict.ACCEPT: True, Verdict.REJECT: False, Verdict.REVIEW: None, Verdict.UNANSWERED: None}
# The table a box question kind starts from when its concept has none (docs/boxes.md, "Calibration"): workers
# assumed right 90% of the time. Under the default thresholds (accept at P >= 0.997, reject at P <= 0.02) it
# accepts at 3 more yes than no and rejects at 2 more no than yes: the fixed rule's few votes, but sequential.
# It is used instead of a calibration batch because a box question excludes its drawers, so a small crowd may
# not have the 10 distinct voters a calibration question needs, and a table measured on the handful of box
# questions a small dataset asks is too weak to decide anything (every question would go to the vote cap).
PRIOR_ACCURACY = 0.9
# Verification before drawing (either rule): finishing open jobs first keeps few boxes pending.
PRIORITY = 10


def box_question_ask(
    question: questions.BinaryQuestion, *, rule: dict | None = None, task_kind: str = TASK_KIND
) -> Question:
    """The consensus question that asks the box pipeline's `question`: calibrated (no `rule`, served as a
    `question` task) or under a count rule (the fixed backend, served under its own `task_kind`)."""
    # `exclude_workers` keeps the drawer(s) off this question, whenever its task is served.
    subject = {SUBJECT_KEY: question.as_dict(), "exclude_workers": list(question.exclude_workers)}
    # The fixed backend's task kinds show the question from their payload (boxes.fixed_questions).
    payload = {"job": question.job_id, "question": question.as_dict()} if rule else None
    if question.kind == questions.QUALITY:
        box = Box.objects.select_related("image").get(pk=question.box_id)
        target = Target(image=box.image, box=box, subject=subject, payload=payload)
        kind = str(QuestionKind.BOX_QUALITY)
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
        target = Target(image=image, subject=subject, round=earlier + 1, payload=payload)
        kind = str(QuestionKind.BOX_COVERAGE)
    concept = Concept.objects.get(pk=question.concept_id)
    dataset = Dataset.objects.get(pk=question.dataset_id)
    if rule:
        (created,) = count_questions_create(
            dataset=dataset,
            kind=kind,
            concept=concept,
            targets=[target],
            rule=rule,
            task_kind=task_kind,
            text=question.text,
            priority=PRIORITY,
        )
        return created
    table_ensure(kind, concept)
    (created,) = questions_create(
        dataset=dataset, kind=kind, concept=concept, targets=[target], text=question.text, priority=PRIORITY
    )
    return created


def backend_chosen() -> str:
    """Which rule decides the box questions asked from now on: "consensus" (calibrated, the default) or
    "fixed" (`boxes.fixed_questions`)."""
    chosen = settings.CROWDLABEL.get("BOX_QUESTION_BACKEND", CONSENSUS)
    return CONSENSUS if chosen == CONSENSUS else "fixed"


def table_ensure(kind: str, concept: Concept) -> CalibrationTable:
    """The newest table of (kind, concept), or the prior table created now when there is none: production box
    questions are then served at once instead of waiting for a calibration batch."""
    found = table_newest(kind, concept.pk)
    if found is not None:
        return found
    # The rebuild's lock, one table writer at a time; NO KEY, so rows naming the concept can still be inserted.
    Concept.objects.select_for_update(no_key=True).get(pk=concept.pk)
    found = table_newest(kind, concept.pk)
    if found is not None:
        return found
    table = prior_table(accuracy=PRIOR_ACCURACY, cap=table_cap())
    return CalibrationTable.objects.create(
        kind=kind,
        concept=concept,
        table=table.to_dict(),
        n_images=0,
        n_votes=0,
        method=table.method,
        last_vote_id=0,
    )


def on_decided(event: events.QuestionDecided) -> None:
    """A box question decided (by the calibrated rule, its fixed rule, or its reviewer) goes back to its job
    (`boxes.services.on_question_decided`)."""
    asked = (event.question.subject or {}).get(SUBJECT_KEY)
    if asked is None:
        return  # a box question some other pipeline asked
    # The job's next step reads the questions of the job (a coverage round's, the box's), this one included.
    event.writes_send()
    if event.question.kind == QuestionKind.BOX_COVERAGE and round_superseded(event.question):
        # Voided votes revised a coverage round the job has moved past (a later round exists): its verdict is
        # about boxes since added to, and must not decide the job's current round.
        return
    outcome = _OUTCOME[Verdict(event.decision.decision)]
    services.on_question_decided(questions.BinaryQuestion.from_dict(asked), outcome)


def connect() -> None:
    """Take the decisions of the box pipeline's questions back to their jobs (called from `BoxesConfig.ready`)."""
    for kind in KINDS:
        events.subscribe(kind, on_decided)
