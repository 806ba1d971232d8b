"""Writes to the concept DAG and loading question hierarchies from fixture files."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
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


class ConceptConflict(ValueError):
    """The file would rewrite the gloss or the parents of concepts datasets use; `errors` names each one."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("; ".join(errors))


# wnids -> {wnid: names of the datasets that use it}. Concepts are the ground floor: the apps that use them
# (annotation: datasets' picked classes and tasks) register here in `AppConfig.ready`, so every loader of a
# hierarchy (the upload endpoint, `load_hierarchy`, the simulator) applies the same "concept in use" rule.
ConceptUsers = Callable[[list[str]], Mapping[str, Iterable[str]]]
_concept_users: list[ConceptUsers] = []


def register_concept_users(fn: ConceptUsers) -> ConceptUsers:
    """Registering the same callable twice is a no-op (`ready()` may run twice)."""
    if fn not in _concept_users:
        _concept_users.append(fn)
    return fn


def concepts_in_use(wnids: Iterable[str]) -> dict[str, list[str]]:
    """wnid -> the sorted names of the datasets using it, as the registered apps say (only the given wnids)."""
    wnids = sorted(set(wnids))
    users: dict[str, set[str]] = defaultdict(set)
    for fn in _concept_users:
        for wnid, names in fn(wnids).items():
            users[wnid].update(names)
    return {wnid: sorted(names) for wnid, names in users.items()}


def concept_conflicts(fixture: HierarchyFixture, in_use: Mapping[str, Iterable[str]]) -> list[str]:
    """What loading `fixture` would change about concepts in use (wnid -> names of the datasets using it):
    another gloss, or another is-a parent. Concepts are shared by every dataset, so such a change would
    silently alter the meaning of their labels; each conflict names the stored and the uploaded value."""
    wanted = {node.wnid: node for node in fixture.nodes if node.wnid and node.wnid in in_use}
    if not wanted:
        return []
    stored = {c.wnid: c for c in Concept.objects.filter(wnid__in=wanted).prefetch_related("parents")}
    errors = []
    for wnid, node in wanted.items():
        concept = stored.get(wnid)
        if concept is None:
            continue
        users = ", ".join(sorted(in_use[wnid]))
        if node.gloss and concept.gloss and node.gloss.strip() != concept.gloss.strip():
            errors.append(
                f"{wnid} ({concept.name}): gloss {node.gloss!r} in this file conflicts with the stored gloss "
                f"{concept.gloss!r} used by dataset(s) {users}"
            )
        old_parents = {p.wnid for p in concept.parents.all()}
        new_parents = {p for p in node.parents if WNID_RE.match(p)} - old_parents
        if new_parents:
            errors.append(
                f"{wnid} ({concept.name}): parent(s) {', '.join(sorted(new_parents))} in this file conflict with "
                f"the stored parent(s) {', '.join(sorted(old_parents)) or '(none)'} used by dataset(s) {users}"
            )
    return errors


@dataclass(frozen=True)
class LoadResult:
    hierarchy: Hierarchy
    created: bool
    nodes: int
    leaves: int


def hierarchy_load(
    fixture: HierarchyFixture, in_use: Mapping[str, Iterable[str]] | None = None
) -> LoadResult:
    """Store a validated fixture (see hierarchy.fixture) as a Hierarchy with its QuestionNodes, in one transaction.

    Every node gets a concept: its synset when its id is a wnid (with is-a edges between synset nodes), else a
    local concept named by its question id, so the consensus engine has a subject for every question. Loading
    the same name and version again is a no-op when the DAG is the same and refused when it differs (bump the
    version: stored labeling states refer to the DAG they were recorded on). A file that would change the gloss
    or parents of a concept in use (`in_use`: wnid -> names of the datasets using it; by default what the
    registered apps say, `concepts_in_use`) is refused (ConceptConflict) and nothing is stored."""
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
        if in_use is None:
            in_use = concepts_in_use(node.wnid for node in fixture.nodes if node.wnid)
        conflicts = concept_conflicts(fixture, in_use)
        if conflicts:
            raise ConceptConflict(conflicts)
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
