"""The default backend for the box pipeline's binary questions: a fixed-majority vote of a few workers,
stopping early once the majority cannot change (as `binary_vote` does). A higher app with calibrated,
sequential consensus replaces it per question kind through `annotation.questions.register`.
"""

from __future__ import annotations

from typing import Any

from . import binary_vote, boxes, kinds, questions
from .models import Assignment, AssignmentState, Box, Task, TaskExclusion, TaskState

# Votes per question. Coverage gets more: a wrong "yes, all boxed" loses an instance for good, while a wrong
# "no" only costs one more DRAW round (figures in docs/boxes.md, from bench/box_cost.py).
VOTES = {questions.QUALITY: 3, questions.COVERAGE: 5}
# Verification before drawing: finishing open jobs first keeps few boxes pending at any time.
PRIORITY = 10


class FixedMajorityBackend:
    name = "fixed-majority"

    def ask(self, question: questions.BinaryQuestion) -> str:
        task = Task.objects.create(
            kind=question.kind,
            dataset_id=question.dataset_id,
            image_id=question.image_id,
            concept_id=question.concept_id,
            box_id=question.box_id,
            payload={"job": question.job_id, "question": question.as_dict()},
            answers_wanted=VOTES[question.kind],
            priority=PRIORITY,
        )
        TaskExclusion.objects.bulk_create(
            TaskExclusion(task=task, worker_id=w) for w in question.exclude_workers
        )
        return f"task:{task.pk}"


BACKEND = FixedMajorityBackend()


def clean_answer(task: Task, answer: Any) -> dict[str, Any]:
    return binary_vote.clean_answer(task, answer)


def on_submit(assignment: Assignment) -> None:
    task = assignment.task
    answers = list(
        Assignment.objects.filter(task=task, state=AssignmentState.SUBMITTED).values_list("answer", flat=True)
    )
    yes = sum(1 for a in answers if a.get("answer") is True)
    no = len(answers) - yes
    outcome = binary_vote.majority_outcome(yes, no, task.answers_wanted)
    if outcome is None and yes + no < task.answers_wanted:
        return
    task.state = TaskState.DONE
    task.result = {"answer": outcome, "yes": yes, "no": no, "rule": f"majority of {task.answers_wanted}"}
    boxes.on_question_decided(questions.BinaryQuestion.from_dict(task.payload["question"]), outcome)


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
