"""How a hierarchy question reaches the crowd: the one place that decides which engine collects the votes.

For now every question is its own micro-task of kind `hierarchy_question`, decided by the sequential "yes"-biased
vote of hierarchy/voting.py (see hierarchy/question_kind.py). Swapping in the consensus engine means changing
`questions_open` to create consensus questions and subscribing `labeling_answer` to its decision events; the
labeling service calls nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence

from annotation.models import Task

from .graph import HierarchyGraph
from .models import ImageLabeling
from .voting import rule_for

TASK_KIND = "hierarchy_question"


def questions_open(
    graph: HierarchyGraph, asks: Sequence[tuple[ImageLabeling, str]], priority: int = 0
) -> None:
    """Put question `node_id` about the labeling's image to the crowd, for each (labeling, node_id)."""
    tasks = []
    for labeling, node_id in asks:
        node = graph.nodes[node_id]
        tasks.append(
            Task(
                kind=TASK_KIND,
                dataset_id=labeling.dataset_id,
                image_id=labeling.image_id,
                concept_id=node.concept_id,
                payload={
                    "question": node.question,
                    "node": node_id,
                    "hierarchy": graph.hierarchy_id,
                    "dag": graph.dag.fingerprint,
                    "labeling": labeling.pk,
                },
                answers_wanted=rule_for(node.leaf).max_votes,
                priority=priority,
            )
        )
    Task.objects.bulk_create(tasks, batch_size=500)
