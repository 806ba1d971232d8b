"""The plain binary vote kind: "does this image show CONCEPT?" answered yes/no by several workers.

Until a consensus engine takes over a dataset, the task closes with a fixed majority of `answers_wanted`
votes (stopping early once the majority cannot change).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Count, Q

from . import kinds, queue
from .final_evidence import BINARY_VOTE
from .final_labels import LabelVerdict, final_labels_record
from .models import Assignment, AssignmentState, Dataset, Image, Task, TaskState
from .queue.contract import TaskChange

KIND = "binary_vote"


def question_text(concept_name: str) -> str:
    article = "an" if concept_name[:1].lower() in "aeiou" else "a"
    return f"Does this image show {article} {concept_name}?"


def clean_answer(task: Task, answer: Any) -> dict[str, Any]:
    if not isinstance(answer, dict) or "answer" not in answer:
        raise kinds.AnswerInvalid('the answer must be an object like {"answer": true}')
    value = answer["answer"]
    if not isinstance(value, bool):
        raise kinds.AnswerInvalid(f'"answer" must be true or false, got {value!r}')
    return {"answer": value}


def majority_outcome(yes: int, no: int, wanted: int) -> bool | None:
    """The decided answer once one side holds a strict majority of `wanted` votes, else None."""
    need = wanted // 2 + 1
    if yes >= need:
        return True
    if no >= need:
        return False
    return None  # an even `wanted` can end in a tie: the task closes with answer None


def on_submit(assignment: Assignment) -> TaskChange:
    """Count the answer and close the task once the majority is settled.

    The running yes/no tally lives in `task.result` while the task is open: the queue holds the task row
    locked, so the count in the row is exact and no query over the answers is needed."""
    task = assignment.task
    tally = task.result if isinstance(task.result, dict) and "yes" in task.result else None
    if tally is None:
        tally = _tally_from_answers(task, exclude=assignment)  # tasks from before the tally was kept
    yes = tally["yes"] + (1 if assignment.answer["answer"] else 0)
    no = tally["no"] + (0 if assignment.answer["answer"] else 1)
    outcome = majority_outcome(yes, no, task.answers_wanted)
    if outcome is not None or yes + no >= task.answers_wanted:
        if task.image_id is not None and task.concept_id is not None:
            final_labels_record(
                dataset_id=task.dataset_id,
                source=BINARY_VOTE,
                verdicts=[
                    LabelVerdict(task.image_id, task.concept_id, outcome, yes, no, ref={"task": task.pk})
                ],
            )
        result = {"answer": outcome, "yes": yes, "no": no, "rule": f"majority of {task.answers_wanted}"}
        return TaskChange(state=TaskState.DONE, result=result)
    return TaskChange(result={"yes": yes, "no": no})


def _tally_from_answers(task: Task, exclude: Assignment) -> dict[str, int]:
    if task.answers_count <= 1:
        return {"yes": 0, "no": 0}
    counts = (
        Assignment.objects.filter(task=task, state=AssignmentState.SUBMITTED)
        .exclude(pk=exclude.pk)
        .aggregate(total=Count("id"), yes=Count("id", filter=Q(answer__answer=True)))
    )
    return {"yes": counts["yes"], "no": counts["total"] - counts["yes"]}


def public_payload(task: Task) -> dict[str, Any]:
    concept = task.concept
    return {
        "question": task.payload.get("question") or question_text(concept.name if concept else "this"),
        "concept": {"wnid": concept.wnid, "name": concept.name, "gloss": concept.gloss} if concept else None,
    }


KIND_SPEC = kinds.register(
    kinds.TaskKind(
        name=KIND,
        title="Yes/no question about an image",
        clean_answer=clean_answer,
        on_submit=on_submit,
        public_payload=public_payload,
    )
)


def vote_tasks_create(
    *,
    dataset: Dataset,
    concept,
    images: list[Image] | None = None,
    answers_wanted: int = 3,
    priority: int = 0,
) -> list[Task]:
    """Queue one binary vote task per image (all of the dataset's images by default). Images that already
    have an open or done vote task for the concept are skipped, so calling this twice queues nothing twice."""
    if answers_wanted < 1:
        raise ValueError("answers_wanted must be at least 1")
    with transaction.atomic():
        image_qs = (
            dataset.images.all() if images is None else Image.objects.filter(pk__in=[i.pk for i in images])
        )
        already = set(
            Task.objects.filter(kind=KIND, dataset=dataset, concept=concept)
            .exclude(state=TaskState.CANCELLED)
            .values_list("image_id", flat=True)
        )
        tasks = [
            Task(
                kind=KIND,
                dataset=dataset,
                image=image,
                concept=concept,
                payload={"question": question_text(concept.name)},
                answers_wanted=answers_wanted,
                priority=priority,
            )
            for image in image_qs.order_by("id")
            if image.pk not in already
        ]
        return queue.tasks_create(tasks, batch_size=1000)
