"""The `hierarchy_question` task kind: "Is there ANY living organism (other than people) in this image?" with the
node's gloss and examples, answered yes/no. Each task serves a consensus question of multilabel/asking.py's
`vote` engine, decided by its margin rule in the one engine (`consensus.question_kind`); the `consensus` engine
asks `question` tasks instead."""

from __future__ import annotations

from typing import Any

from annotation import kinds
from annotation.models import Assignment, Task
from consensus import question_kind
from consensus.count_questions import question_adopt
from consensus.models import Question
from hierarchy.graph import graph_for

from .asking import TASK_KIND, kind_for, vote_rule_for


def adopt(assignment: Assignment) -> Question:
    """A `hierarchy_question` task queued before the `vote` engine asked consensus questions (none yet)."""
    task = assignment.task
    node = graph_for(task.payload["hierarchy"], task.payload.get("dag")).nodes[task.payload["node"]]
    return question_adopt(
        task=task,
        current=assignment,
        kind=kind_for(node.leaf),
        rule=vote_rule_for(node.leaf),
        subject=dict(task.payload),
        round=int(task.payload["labeling"]),
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
        on_submit=question_kind.on_submit_adopting(adopt),
        public_payload=public_payload,
        on_withdraw=question_kind.on_withdraw,
    )
)
