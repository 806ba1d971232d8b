"""The plain vote kind decided by the consensus engine's fixed-majority policy: a `binary_vote` task (queued by
`annotation.vote_tasks`) closes once one side holds a strict majority of its `answers_wanted` votes, or with no
answer when an even number of votes ends in a tie (`consensus.stopping.MajorityPolicy`: the tie is its REVIEW).
The verdict becomes a final label (`annotation.final_labels`, source `binary_vote`).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from annotation import kinds
from annotation.final_evidence import BINARY_VOTE
from annotation.final_labels import LabelVerdict, final_labels_record
from annotation.models import Assignment, AssignmentState, Task, TaskState
from annotation.queue.contract import TaskChange
from annotation.vote_tasks import KIND, question_text

from .stopping import Decision, MajorityPolicy, decide, outcome_of


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
    decision = decide(None, yes, no, MajorityPolicy(task.answers_wanted))
    if decision is Decision.ASK_MORE:
        return TaskChange(result={"yes": yes, "no": no})
    outcome = outcome_of(decision)  # a tie at the cap (Decision.REVIEW) closes the task unanswered
    result = {"answer": outcome, "yes": yes, "no": no, "rule": f"majority of {task.answers_wanted}"}
    if task.image_id is not None and task.concept_id is not None:
        final_labels_record(
            dataset_id=task.dataset_id,
            source=BINARY_VOTE,
            verdicts=[LabelVerdict(task.image_id, task.concept_id, outcome, yes, no, ref={"task": task.pk})],
        )
    return TaskChange(state=TaskState.DONE, result=result)


def on_withdraw(assignment: Assignment) -> TaskChange:
    """The worker takes the answer back in the undo window: it leaves the running tally of the open task; a
    closed task keeps it (its label is recorded)."""
    task = assignment.task
    if task.state == TaskState.DONE:
        raise kinds.AnswerStands("its question has been decided, so this answer stands")
    tally = task.result if isinstance(task.result, dict) and "yes" in task.result else None
    if tally is None:
        return TaskChange(result=_tally_from_answers(task, exclude=assignment))
    yes = tally["yes"] - (1 if assignment.answer["answer"] else 0)
    no = tally["no"] - (0 if assignment.answer["answer"] else 1)
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
        clean_answer=kinds.yes_no_answer,
        on_submit=on_submit,
        public_payload=public_payload,
        on_withdraw=on_withdraw,
    )
)
