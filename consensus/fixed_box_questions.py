"""The fixed box-question backend (`CROWDLABEL_BOX_QUESTION_BACKEND=fixed`, and the box pipeline's default until
the consensus backend of `consensus/box_questions.py` takes a kind over): a `box_quality` or `box_coverage` task
asked of a few workers and decided by a first-to-k policy of the consensus engine (`consensus.stopping.
FirstToPolicy`), which stops as soon as one side has the votes it needs; each decision goes back to
`annotation.boxes.on_question_decided`.
"""

from __future__ import annotations

from typing import Any

from annotation import boxes, kinds, questions, queue
from annotation.models import Assignment, AssignmentState, Box, Task, TaskExclusion, TaskState
from annotation.queue.contract import TaskChange

from .stopping import Decision, FirstToPolicy, decide, outcome_of

# The policy per question; the task takes at most yes + no - 1 votes.
# QUALITY: a majority of 3 with early stop. COVERAGE is asymmetric: a wrong "yes, every instance is boxed"
# loses an instance for good, while a wrong "no" only costs one more DRAW round whose drawer can answer
# "nothing left"; so "yes" needs three votes and a single "no" queues another DRAW. On the simulated crowd
# this lifts image coverage from 0.95 (majority of 3) to 0.997 for 7% more worker time (bench/box_cost.py,
# docs/boxes.md).
POLICIES: dict[str, FirstToPolicy] = {
    questions.QUALITY: FirstToPolicy(yes_needed=2, no_needed=2),
    questions.COVERAGE: FirstToPolicy(yes_needed=3, no_needed=1),
}
# Verification before drawing: finishing open jobs first keeps few boxes pending at any time.
PRIORITY = 10


class FixedRuleBackend:
    name = "fixed-majority"

    def ask(self, question: questions.BinaryQuestion) -> str:
        task = queue.task_create(
            kind=question.kind,
            dataset_id=question.dataset_id,
            image_id=question.image_id,
            concept_id=question.concept_id,
            box_id=question.box_id,
            payload={"job": question.job_id, "question": question.as_dict()},
            answers_wanted=POLICIES[question.kind].cap,
            priority=PRIORITY,
        )
        TaskExclusion.objects.bulk_create(
            TaskExclusion(task=task, worker_id=w) for w in question.exclude_workers
        )
        return f"task:{task.pk}"


BACKEND = FixedRuleBackend()


def on_submit(assignment: Assignment) -> TaskChange | None:
    task = assignment.task
    answers = list(
        Assignment.objects.filter(task=task, state=AssignmentState.SUBMITTED).values_list("answer", flat=True)
    )
    yes = sum(1 for a in answers if a.get("answer") is True)
    no = len(answers) - yes
    policy = POLICIES[task.kind]
    decision = decide(None, yes, no, policy)
    if decision is Decision.ASK_MORE and yes + no < task.answers_wanted:
        return None
    outcome = outcome_of(decision)
    boxes.on_question_decided(questions.BinaryQuestion.from_dict(task.payload["question"]), outcome)
    result = {"answer": outcome, "yes": yes, "no": no, "rule": str(policy)}
    return TaskChange(state=TaskState.DONE, result=result)


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
    """Register the two box-question task kinds and make this the backend of every kind no other backend took
    (called from `ConsensusConfig.ready`)."""
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
                on_withdraw=kinds.recount_withdraw,
            )
        )
    questions.register_default(BACKEND)
