"""The `hierarchy_question` task kind: "Is there ANY living organism (other than people) in this image?" with the
node's gloss and examples, answered yes/no: the `vote` engine of multilabel/asking.py, decided by its margin
policies (`consensus.stopping.MarginPolicy`; the `consensus` engine asks `question` tasks instead)."""

from __future__ import annotations

from typing import Any

from annotation import kinds
from annotation.models import Assignment, AssignmentState, Task, TaskState
from annotation.queue import TaskChange
from consensus.stopping import decide, outcome_of
from hierarchy.graph import graph_for

from .asking import TASK_KIND, vote_policy_for
from .labeling import labeling_answer


def on_submit(assignment: Assignment) -> TaskChange | None:
    task = assignment.task
    answers = list(
        Assignment.objects.filter(task=task, state=AssignmentState.SUBMITTED).values_list("answer", flat=True)
    )
    yes = sum(1 for a in answers if a.get("answer") is True)
    no = len(answers) - yes
    node = graph_for(task.payload["hierarchy"], task.payload.get("dag")).nodes[task.payload["node"]]
    policy = vote_policy_for(node.leaf)
    outcome = outcome_of(decide(None, yes, no, policy))
    if outcome is None:
        return None
    labeling_answer(
        labeling_id=task.payload["labeling"],
        node_id=node.node_id,
        present=outcome,
        yes_votes=yes,
        no_votes=no,
        task=task,
    )
    return TaskChange(
        state=TaskState.DONE, result={"answer": outcome, "yes": yes, "no": no, "rule": str(policy)}
    )


def public_payload(task: Task) -> dict[str, Any]:
    graph = graph_for(task.payload["hierarchy"], task.payload.get("dag"))
    node = graph.nodes[task.payload["node"]]
    return {
        "question": node.question,
        # `concept` is what the shared yes/no renderer shows under the question: the node's name and gloss.
        "concept": {"wnid": node.node_id, "name": node.name, "gloss": node.gloss},
        "examples": graph.examples(node.node_id),
    }


KIND_SPEC = kinds.register(
    kinds.TaskKind(
        name=TASK_KIND,
        title="Is there ANY ... in this image?",
        clean_answer=kinds.yes_no_answer,
        on_submit=on_submit,
        public_payload=public_payload,
        on_withdraw=kinds.recount_withdraw,
    )
)
