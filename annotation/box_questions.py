"""The default backend for the box pipeline's binary questions: a fixed vote of a few workers that stops as
soon as one side has the votes it needs. A higher app with calibrated, sequential consensus replaces it per
question kind through `annotation.questions.register`.
"""

from __future__ import annotations

from typing import Any

from . import binary_vote, boxes, kinds, questions, queue
from .models import Assignment, AssignmentState, Box, Task, TaskExclusion, TaskState
from .queue.contract import TaskChange

# (yes votes needed, no votes needed) per question; the task takes at most yes + no - 1 votes.
# QUALITY: a majority of 3 with early stop. COVERAGE is asymmetric: a wrong "yes, every instance is boxed"
# loses an instance for good, while a wrong "no" only costs one more DRAW round whose drawer can answer
# "nothing left"; so "yes" needs three votes and a single "no" queues another DRAW. On the simulated crowd
# this lifts image coverage from 0.95 (majority of 3) to 0.997 for 7% more worker time (bench/box_cost.py,
# docs/boxes.md).
RULES: dict[str, tuple[int, int]] = {questions.QUALITY: (2, 2), questions.COVERAGE: (3, 1)}
# Verification before drawing: finishing open jobs first keeps few boxes pending at any time.
PRIORITY = 10


class FixedMajorityBackend:
    name = "fixed-majority"

    def ask(self, question: questions.BinaryQuestion) -> str:
        task = queue.task_create(
            kind=question.kind,
            dataset_id=question.dataset_id,
            image_id=question.image_id,
            concept_id=question.concept_id,
            box_id=question.box_id,
            payload={"job": question.job_id, "question": question.as_dict()},
            answers_wanted=sum(RULES[question.kind]) - 1,
            priority=PRIORITY,
        )
        TaskExclusion.objects.bulk_create(
            TaskExclusion(task=task, worker_id=w) for w in question.exclude_workers
        )
        return f"task:{task.pk}"


BACKEND = FixedMajorityBackend()


def clean_answer(task: Task, answer: Any) -> dict[str, Any]:
    return binary_vote.clean_answer(task, answer)


def on_submit(assignment: Assignment) -> TaskChange | None:
    task = assignment.task
    answers = list(
        Assignment.objects.filter(task=task, state=AssignmentState.SUBMITTED).values_list("answer", flat=True)
    )
    yes = sum(1 for a in answers if a.get("answer") is True)
    no = len(answers) - yes
    outcome = rule_outcome(RULES[task.kind], yes, no)
    if outcome is None and yes + no < task.answers_wanted:
        return None
    yes_needed, no_needed = RULES[task.kind]
    boxes.on_question_decided(questions.BinaryQuestion.from_dict(task.payload["question"]), outcome)
    result = {"answer": outcome, "yes": yes, "no": no, "rule": f"{yes_needed} yes or {no_needed} no"}
    return TaskChange(state=TaskState.DONE, result=result)


def rule_outcome(rule: tuple[int, int], yes: int, no: int) -> bool | None:
    """True once `yes` reaches the rule's yes count, False once `no` reaches its no count, else None."""
    yes_needed, no_needed = rule
    if yes >= yes_needed:
        return True
    if no >= no_needed:
        return False
    return None


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


for _kind, _title in (
    (questions.QUALITY, "Check a box"),
    (questions.COVERAGE, "Check that every instance is boxed"),
):
    kinds.register(
        kinds.TaskKind(
            name=_kind,
            title=_title,
            clean_answer=clean_answer,
            on_submit=on_submit,
            public_payload=public_payload,
        )
    )
questions.register_default(BACKEND)
