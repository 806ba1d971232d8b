"""How a hierarchy question reaches the crowd and how its decision comes back: the one place that knows which
engine decides it. The labeling service calls `questions_open`; the engine calls `labeling_answer` once decided.

- `consensus` (default): a consensus question of kind `hierarchy` about the node's concept, decided by the
  calibrated stopping rule, which favours "yes" for this kind (a conservative reject threshold: a false "no"
  prunes a whole subtree, ILSVRC §3.3.3). A question sent to review at the vote cap counts as "yes" for the same
  reason. Its decision arrives through `consensus.events` (`question_decided` below).
- `vote`: one `hierarchy_question` task decided by the sequential yes-biased vote of hierarchy/voting.py (see
  hierarchy/question_kind.py); no calibration, so it costs fewer votes on a young dataset.
"""

from __future__ import annotations

from collections.abc import Sequence

from annotation.models import Dataset, Image, Task
from consensus import events as consensus_events
from consensus.models import QuestionKind, Verdict
from consensus.services import Target, questions_create

from .graph import HierarchyGraph
from .models import ImageLabeling, QuestionEngine
from .voting import rule_for

TASK_KIND = "hierarchy_question"


def questions_open(
    graph: HierarchyGraph, asks: Sequence[tuple[ImageLabeling, str]], priority: int = 0
) -> None:
    """Put question `node_id` about the labeling's image to the crowd, for each (labeling, node_id)."""
    by_engine: dict[str, list[tuple[ImageLabeling, str]]] = {}
    for labeling, node_id in asks:
        by_engine.setdefault(labeling.engine, []).append((labeling, node_id))
    _open_tasks(graph, by_engine.pop(QuestionEngine.VOTE, []), priority)
    _open_consensus_questions(graph, by_engine.pop(QuestionEngine.CONSENSUS, []), priority)
    if by_engine:
        raise ValueError(f"unknown question engine(s): {sorted(by_engine)}")


def _subject(graph: HierarchyGraph, labeling: ImageLabeling, node_id: str) -> dict:
    return {
        "question": graph.nodes[node_id].question,
        "node": node_id,
        "hierarchy": graph.hierarchy_id,
        "dag": graph.dag.fingerprint,
        "labeling": labeling.pk,
    }


def _open_tasks(graph: HierarchyGraph, asks: Sequence[tuple[ImageLabeling, str]], priority: int) -> None:
    tasks = [
        Task(
            kind=TASK_KIND,
            dataset_id=labeling.dataset_id,
            image_id=labeling.image_id,
            concept_id=graph.nodes[node_id].concept_id,
            payload=_subject(graph, labeling, node_id),
            answers_wanted=rule_for(graph.nodes[node_id].leaf).max_votes,
            priority=priority,
        )
        for labeling, node_id in asks
    ]
    Task.objects.bulk_create(tasks, batch_size=500)


def _open_consensus_questions(
    graph: HierarchyGraph, asks: Sequence[tuple[ImageLabeling, str]], priority: int
) -> None:
    if not asks:
        return
    images = Image.objects.in_bulk({labeling.image_id for labeling, _ in asks})
    datasets = Dataset.objects.in_bulk({labeling.dataset_id for labeling, _ in asks})
    groups: dict[tuple[int, str], list[ImageLabeling]] = {}
    for labeling, node_id in asks:
        groups.setdefault((labeling.dataset_id, node_id), []).append(labeling)
    for (dataset_id, node_id), labelings in groups.items():
        node = graph.nodes[node_id]
        questions_create(
            dataset=datasets[dataset_id],
            kind=QuestionKind.HIERARCHY,
            concept=node.concept,
            targets=[
                Target(image=images[labeling.image_id], subject=_subject(graph, labeling, node_id))
                for labeling in labelings
            ],
            text=node.question,
            priority=priority,
        )


def question_decided(event: consensus_events.QuestionDecided) -> None:
    """A consensus question of kind `hierarchy` was decided: hand the answer to its image's labeling."""
    from .labeling import labeling_answer  # the labeling service imports this module

    question, decision = event.question, event.decision
    subject = question.subject or {}
    if "labeling" not in subject:
        return  # a hierarchy question created by someone else
    labeling_answer(
        labeling_id=subject["labeling"],
        node_id=subject["node"],
        present=decision.decision != Verdict.REJECT,  # accepted, or ambiguous at the cap: favour "yes"
        yes_votes=question.yes_count,
        no_votes=question.no_count,
        task=question.task,
    )


def subscribe() -> None:
    consensus_events.subscribe(QuestionKind.HIERARCHY, question_decided)
