"""The fixed box-question rule (`CROWDLABEL_BOX_QUESTION_BACKEND=fixed`; the default is the calibrated rule of
`boxes.questions`): a `box_quality` or `box_coverage` question is a consensus question carrying a first-to-k rule
(`consensus.stopping.FirstToPolicy`, stopping as soon as one side has the votes it needs), decided by the one
engine and served under its own task kind; each decision goes back to its job like any box question's
(`boxes.questions.on_decided`).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, F, Q, Value
from django.db.models.functions import Floor, Least

from annotation import kinds, questions
from annotation.models import Assignment, Box, BoxProvenance, BoxState, Task
from annotation.questions import SUBJECT_KEY
from consensus import question_kind
from consensus.count_questions import question_adopt
from consensus.models import Question, QuestionKind
from consensus.stopping import FirstToPolicy, rule_of
from predictions.score_prior import BAND_WIDTH, credited_rule, score_prior_from_counts

from . import questions as box_questions

# The policy per question; the question takes at most yes + no - 1 votes.
# QUALITY: a majority of 3 with early stop. COVERAGE is asymmetric: a wrong "yes, every instance is boxed"
# loses an instance for good, while a wrong "no" only costs one more DRAW round whose drawer can answer
# "nothing left"; so "yes" needs three votes and a single "no" queues another DRAW. On the simulated crowd
# this lifts image coverage from 0.95 (majority of 3) to 0.997 for 7% more worker time (bench/box_cost.py,
# docs/boxes.md).
POLICIES: dict[str, FirstToPolicy] = {
    questions.QUALITY: FirstToPolicy(yes_needed=2, no_needed=2),
    questions.COVERAGE: FirstToPolicy(yes_needed=3, no_needed=1),
}


def ask(question: questions.BinaryQuestion) -> Question:
    """The consensus question asking `question` under its kind's first-to-k rule, served as a task of that
    kind; a model's proposal asked QUALITY gets its score band's vote credits (`proposal_policy`)."""
    policy = POLICIES[question.kind]
    if question.kind == questions.QUALITY and question.box_id is not None:
        policy = proposal_policy(policy, question)
    return box_questions.box_question_ask(question, rule=rule_of(policy), task_kind=question.kind)


def proposal_policy(policy: FirstToPolicy, question: questions.BinaryQuestion) -> FirstToPolicy:
    """The QUALITY rule for a model's proposal: the first-to-k rule with the vote credits its score band has
    earned (`predictions.score_prior`, docs/boxes.md "The score as a prior"), calibrated on the crowd's verdicts
    on the dataset's earlier proposals of the class (accepted: right; rejected: wrong). A drawn box, or a band
    without enough verdicts, keeps the rule as it is; at least one human vote is always asked."""
    score = (
        Box.objects.filter(pk=question.box_id, provenance=BoxProvenance.MODEL)
        .values_list("score", flat=True)
        .first()
    )
    if score is None:
        return policy
    n_bands = round(1.0 / BAND_WIDTH)
    band = Least(Floor(F("score") * float(n_bands)), Value(float(n_bands - 1)))
    rows = (
        Box.objects.filter(
            image__dataset_id=question.dataset_id,
            concept_id=question.concept_id,
            provenance__in=(BoxProvenance.MODEL, BoxProvenance.MODEL_VERIFIED),
            state__in=(BoxState.ACCEPTED, BoxState.REJECTED),
            score__isnull=False,
        )
        .annotate(band=band)
        .values("band")
        .annotate(checked=Count("id"), right=Count("id", filter=Q(state=BoxState.ACCEPTED)))
    )
    checked, right = [0] * n_bands, [0] * n_bands
    for row in rows:
        checked[int(row["band"])], right[int(row["band"])] = row["checked"], row["right"]
    prior = score_prior_from_counts(checked, right)
    yes, no = credited_rule((policy.yes_needed, policy.no_needed), *prior.credits(score))
    return FirstToPolicy(yes_needed=yes, no_needed=no)


def adopt(assignment: Assignment) -> Question:
    """A fixed box-question task queued before these were consensus questions (no question yet)."""
    task = assignment.task
    asked = questions.BinaryQuestion.from_dict(task.payload["question"])
    subject = {SUBJECT_KEY: asked.as_dict(), "exclude_workers": list(asked.exclude_workers)}
    earlier = 0
    if asked.kind == questions.COVERAGE:
        earlier = Question.objects.filter(
            dataset_id=task.dataset_id,
            kind=QuestionKind.BOX_COVERAGE,
            concept_id=task.concept_id,
            image_id=task.image_id,
            box__isnull=True,
        ).count()
    return question_adopt(
        task=task,
        current=assignment,
        kind=asked.kind,
        rule=rule_of(POLICIES[asked.kind]),
        subject=subject,
        round=earlier + 1 if asked.kind == questions.COVERAGE else 0,
    )


# One handler object for both kinds, so registering twice (ready() run again) registers the same kind.
on_submit = question_kind.on_submit_adopting(adopt)


def _box(box: Box) -> list[float]:
    return [box.x1, box.y1, box.x2, box.y2]


def public_payload(task: Task) -> dict[str, Any]:
    question = questions.BinaryQuestion.from_dict(task.payload["question"])
    concept = task.concept
    assert concept is not None
    shown = {b.pk: b for b in Box.objects.filter(pk__in=[*question.box_ids, question.box_id or 0])}
    data: dict[str, Any] = {
        "question": question.text,
        "concept": {"wnid": concept.wnid, "name": concept.name, "gloss": concept.gloss},
        "boxes": [_box(shown[b]) for b in question.box_ids if b in shown],
    }
    if question.box_id is not None:
        data["box"] = _box(shown[question.box_id])
    return data


def register() -> None:
    """Register the two box-question task kinds with the queue (called from `BoxesConfig.ready`): the tasks
    of questions asked under the fixed rule, and of those queued before they were consensus questions."""
    for kind, title in (
        (questions.QUALITY, "Check a box"),
        (questions.COVERAGE, "Check that every instance is boxed"),
    ):
        kinds.register(
            kinds.TaskKind(
                name=kind,
                title=title,
                clean_answer=kinds.yes_no_answer,
                on_submit=on_submit,
                public_payload=public_payload,
                on_withdraw=question_kind.on_withdraw,
            )
        )
