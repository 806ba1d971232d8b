"""Writes to the concept DAG and loading question hierarchies from fixture files."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db import transaction

from .fixture import WNID_RE, HierarchyFixture
from .models import Concept, ConceptEdge, Hierarchy, QuestionNode


def concepts_upsert(nodes: Iterable[Mapping]) -> dict[str, Concept]:
    """Create or update concepts and their is-a edges from validated node mappings with keys `wnid`, `name`,
    `gloss` and `parents` (a list of wnids present in the same batch or already stored). One transaction."""
    nodes = list(nodes)
    with transaction.atomic():
        by_wnid: dict[str, Concept] = {}
        for node in nodes:
            concept, _ = Concept.objects.update_or_create(
                wnid=node["wnid"], defaults={"name": node["name"], "gloss": node.get("gloss", "")}
            )
            by_wnid[concept.wnid] = concept
        wanted_parents = {p for node in nodes for p in node.get("parents", ())} - set(by_wnid)
        by_wnid.update({c.wnid: c for c in Concept.objects.filter(wnid__in=wanted_parents)})
        missing = sorted(wanted_parents - set(by_wnid))
        if missing:
            raise ValueError(f"unknown parent concepts: {', '.join(missing)}")
        edges = [
            ConceptEdge(parent=by_wnid[parent], child=by_wnid[node["wnid"]])
            for node in nodes
            for parent in node.get("parents", ())
        ]
        ConceptEdge.objects.bulk_create(edges, ignore_conflicts=True)
        return by_wnid


class HierarchyConflict(ValueError):
    """A hierarchy with this name and version is stored with a different question DAG."""


@dataclass(frozen=True)
class LoadResult:
    hierarchy: Hierarchy
    created: bool
    nodes: int
    leaves: int


def hierarchy_load(fixture: HierarchyFixture) -> LoadResult:
    """Store a validated fixture (see hierarchy.fixture) as a Hierarchy with its QuestionNodes, in one transaction.

    Every node gets a concept: its synset when its id is a wnid (with is-a edges between synset nodes), else a
    local concept named by its question id, so the consensus engine has a subject for every question. Loading
    the same name and version again is a no-op when the DAG is the same and refused when it differs (bump the
    version: stored labeling states refer to the DAG they were recorded on)."""
    dag = fixture.to_dag()  # raises DagError on a structural problem the fixture parser did not catch
    with transaction.atomic():
        existing = (
            Hierarchy.objects.select_for_update().filter(name=fixture.name, version=fixture.version).first()
        )
        if existing is not None:
            if existing.fingerprint != dag.fingerprint:
                raise HierarchyConflict(
                    f"hierarchy {fixture.name!r} version {fixture.version!r} is already stored with another "
                    f"question DAG ({existing.fingerprint}, this file: {dag.fingerprint}); bump the version"
                )
            return LoadResult(
                existing, False, existing.nodes.count(), existing.nodes.filter(leaf=True).count()
            )
        concepts = concepts_upsert(
            {
                "wnid": node.id,
                "name": node.name,
                "gloss": node.gloss,
                # Is-a edges only between synsets: question ids are groupings, not concepts of WordNet.
                "parents": [p for p in node.parents if node.wnid and WNID_RE.match(p)],
            }
            for node in fixture.nodes
        )
        hierarchy = Hierarchy.objects.create(
            name=fixture.name,
            version=fixture.version,
            description=fixture.description,
            fingerprint=dag.fingerprint,
        )
        rows = QuestionNode.objects.bulk_create(
            QuestionNode(
                hierarchy=hierarchy,
                node_id=node.id,
                name=node.name,
                question=node.question,
                gloss=node.gloss,
                leaf=node.leaf,
                position=position,
                concept=concepts[node.id],
            )
            for position, node in enumerate(fixture.nodes)
        )
        by_id = {row.node_id: row for row in rows}
        edge = QuestionNode.parents.through
        edge.objects.bulk_create(
            edge(from_questionnode_id=by_id[node.id].pk, to_questionnode_id=by_id[parent].pk)
            for node in fixture.nodes
            for parent in node.parents
        )
        return LoadResult(hierarchy, True, len(rows), len(fixture.leaves))
