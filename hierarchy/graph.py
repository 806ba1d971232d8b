"""A stored hierarchy as the pure core's QuestionDag, with its node rows, cached per process.

Hierarchies are never edited once loaded (a changed DAG needs a new version), so a cache keyed by hierarchy id
and checked against the stored fingerprint stays true.
"""

from __future__ import annotations

from dataclasses import dataclass

from .algorithm import QuestionDag
from .algorithm import QuestionNode as DagNode
from .models import Hierarchy, QuestionNode


@dataclass(frozen=True)
class HierarchyGraph:
    hierarchy_id: int
    dag: QuestionDag
    nodes: dict[str, QuestionNode]  # node_id -> row (with concept_id)
    leaf_of_concept: dict[int, str]  # concept id -> leaf node_id
    created_at: object = None  # the hierarchy row's: an id that comes back names another row

    def examples(self, node_id: str, limit: int = 6) -> list[str]:
        """Names of leaves below a question, for the worker page ("such as ...")."""
        if self.dag.node(node_id).leaf:
            return []
        return [self.nodes[leaf].name for leaf in self.dag.leaves_under(node_id)[:limit]]


_cache: dict[int, HierarchyGraph] = {}


def graph_for(hierarchy: Hierarchy | int, fingerprint: str | None = None) -> HierarchyGraph:
    """The graph of a hierarchy. Given the DAG fingerprint the caller expects (labeling states and question
    tasks record it), a cached graph is returned without touching the database."""
    if fingerprint is not None and not isinstance(hierarchy, Hierarchy):
        cached = _cache.get(hierarchy)
        if cached is not None and cached.dag.fingerprint == fingerprint:
            return cached
    row = hierarchy if isinstance(hierarchy, Hierarchy) else Hierarchy.objects.get(pk=hierarchy)
    hierarchy_id = row.pk
    cached = _cache.get(hierarchy_id)
    # Ids can come back after a deletion or a restored database (and do in tests): trust the cache only for the
    # same row (its creation time) with the same DAG; the same fixture loaded again has other node and concept
    # rows under the same fingerprint.
    if (
        cached is not None
        and cached.dag.fingerprint == row.fingerprint
        and cached.created_at == row.created_at
    ):
        return cached
    nodes = list(QuestionNode.objects.filter(hierarchy_id=hierarchy_id).order_by("position"))
    by_pk = {n.pk: n.node_id for n in nodes}
    parents: dict[str, list[str]] = {n.node_id: [] for n in nodes}
    edge = QuestionNode.parents.through
    for child, parent in (
        edge.objects.filter(from_questionnode__hierarchy_id=hierarchy_id)
        .order_by("id")
        .values_list("from_questionnode_id", "to_questionnode_id")
    ):
        parents[by_pk[child]].append(by_pk[parent])
    dag = QuestionDag(
        DagNode(id=n.node_id, parents=tuple(parents[n.node_id]), leaf=n.leaf, question=n.question)
        for n in nodes
    )
    if dag.fingerprint != row.fingerprint:
        raise ValueError(
            f"hierarchy {row} changed since it was loaded ({row.fingerprint} vs {dag.fingerprint})"
        )
    graph = HierarchyGraph(
        hierarchy_id=hierarchy_id,
        dag=dag,
        nodes={n.node_id: n for n in nodes},
        leaf_of_concept={n.concept_id: n.node_id for n in nodes if n.leaf and n.concept_id is not None},
        created_at=row.created_at,
    )
    _cache[hierarchy_id] = graph
    return graph


def graph_cache_clear() -> None:
    """Forget every cached graph (tests simulate a process restart with it)."""
    _cache.clear()
