"""Writes to the concept DAG and loading question hierarchies from fixture files."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from django.db import connections, transaction

from .fixture import WNID_RE, HierarchyFixture
from .models import Concept, ConceptEdge, Hierarchy, QuestionNode


def concepts_upsert(nodes: Iterable[Mapping], keep: Collection[str] = ()) -> dict[str, Concept]:
    """Create or update concepts and their is-a edges from validated node mappings with keys `wnid`, `name`,
    `gloss` and `parents` (a list of wnids present in the same batch or already stored), and optionally
    `lemmas`. Concepts named in `keep` (those datasets use) are created when missing but never rewritten: their
    name and gloss stay, and lemmas they lack are only added (a synonym changes no label). One transaction."""
    nodes = list(nodes)
    keep = frozenset(keep)
    with transaction.atomic():
        by_wnid: dict[str, Concept] = {}
        for node in nodes:
            fields = {
                "name": node["name"],
                "gloss": node.get("gloss", ""),
                "lemmas": list(node.get("lemmas", ())),
            }
            concept, created = Concept.objects.get_or_create(wnid=node["wnid"], defaults=fields)
            if not created:
                if node["wnid"] in keep:
                    added = [x for x in fields["lemmas"] if x not in concept.lemmas]
                    fields = {"lemmas": [*concept.lemmas, *added]} if added else {}
                _concept_update(concept, fields)
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


def _concept_update(concept: Concept, fields: Mapping) -> None:
    """Write the fields of `concept` that differ, with a plain UPDATE. Not `update_or_create`: its
    SELECT ... FOR UPDATE blocks the key-share lock that a vote's or label's foreign key takes on the concept at
    COMMIT, and the soak deadlocked on it when a dataset loaded its hierarchy while other datasets were voting.
    An UPDATE of non-key columns locks FOR NO KEY UPDATE, and a concept that does not change is not locked."""
    changed = {name: value for name, value in fields.items() if getattr(concept, name) != value}
    if not changed:
        return
    Concept.objects.filter(pk=concept.pk).update(**changed)
    for name, value in changed.items():
        setattr(concept, name, value)


class HierarchyConflict(ValueError):
    """A hierarchy with this name and version is stored with a different question DAG."""


@dataclass(frozen=True)
class ConceptChange:
    """What a file would change about a concept datasets use: its `field` (name, gloss or parents) from
    `stored` to `uploaded`; `datasets` maps the ids of the datasets using it to their names."""

    wnid: str
    name: str
    field: str
    stored: str
    uploaded: str
    datasets: Mapping[int, str]

    def describe(self, visible: Collection[int] | None = None) -> str:
        """The refusal in words. `visible`: the ids of the datasets the reader may see named (the uploader's
        own); the rest are "other datasets", never named. None names every dataset (the operator's shell)."""
        if visible is None:
            shown, others = sorted(self.datasets.values()), False
        else:
            shown = sorted(name for pk, name in self.datasets.items() if pk in visible)
            others = any(pk not in visible for pk in self.datasets)
        users = []
        if shown:
            users.append(f"your dataset(s) {', '.join(shown)}" if visible is not None else ", ".join(shown))
        if others:
            users.append("other datasets")
        return (
            f"{self.wnid} ({self.name}): {self.field} {self.uploaded} in this file conflicts with the stored "
            f"{self.field} {self.stored}, {' and '.join(f'used by {u}' for u in users)}; a concept in use keeps "
            "its name, gloss "
            "and parents (say it your way in the node's question)"
        )


class ConceptConflict(ValueError):
    """The file would rewrite the name, gloss or parents of concepts datasets use; `changes` names each one."""

    def __init__(self, changes: list[ConceptChange]):
        self.changes = changes
        super().__init__("; ".join(change.describe() for change in changes))

    def describe(self, visible: Collection[int] | None = None) -> list[str]:
        return [change.describe(visible) for change in self.changes]


# wnids -> {wnid: {id: name} of the datasets that use it}. Concepts are the ground floor: the apps that use them
# (annotation: datasets' picked classes and tasks) register here in `AppConfig.ready`, so every loader of a
# hierarchy (the upload endpoint, `load_hierarchy`, the simulator) applies the same "concept in use" rule.
ConceptUsers = Callable[[list[str]], Mapping[str, Mapping[int, str]]]
_concept_users: list[ConceptUsers] = []


def register_concept_users(fn: ConceptUsers) -> ConceptUsers:
    """Registering the same callable twice is a no-op (`ready()` may run twice)."""
    if fn not in _concept_users:
        _concept_users.append(fn)
    return fn


def concepts_in_use(wnids: Iterable[str]) -> dict[str, dict[int, str]]:
    """wnid -> {id: name} of the datasets using it, as the registered apps say (only the given wnids)."""
    wnids = sorted(set(wnids))
    users: dict[str, dict[int, str]] = defaultdict(dict)
    for fn in _concept_users:
        for wnid, datasets in fn(wnids).items():
            users[wnid].update(datasets)
    return dict(users)


def concept_conflicts(
    fixture: HierarchyFixture, in_use: Mapping[str, Mapping[int, str]]
) -> list[ConceptChange]:
    """What loading `fixture` would change about concepts in use (wnid -> {id: name} of the datasets using
    it): another name, another gloss (a file without a gloss keeps the stored one), or another is-a parent.
    Concepts are shared by every dataset, so such a change would rewrite other organizers' classes, exports
    and questions; each change names the stored and the uploaded value."""
    wanted = {node.id: node for node in fixture.nodes if node.id in in_use}
    if not wanted:
        return []
    stored = {c.wnid: c for c in Concept.objects.filter(wnid__in=wanted).prefetch_related("parents")}
    changes = []
    for wnid, node in wanted.items():
        concept = stored.get(wnid)
        if concept is None:
            continue

        def change(field: str, old: str, new: str, concept=concept, wnid=wnid) -> ConceptChange:
            return ConceptChange(wnid, concept.name, field, old, new, dict(in_use[wnid]))

        if node.name.strip() != concept.name.strip():
            changes.append(change("name", repr(concept.name), repr(node.name)))
        if node.gloss.strip() and node.gloss.strip() != concept.gloss.strip():
            changes.append(change("gloss", repr(concept.gloss), repr(node.gloss)))
        old_parents = {p.wnid for p in concept.parents.all()}
        new_parents = {p for p in node.parents if WNID_RE.match(p)} - old_parents
        if node.wnid and new_parents:
            changes.append(
                change(
                    "parent(s)", ", ".join(sorted(old_parents)) or "(none)", ", ".join(sorted(new_parents))
                )
            )
    return changes


@dataclass(frozen=True)
class LoadResult:
    hierarchy: Hierarchy
    created: bool
    nodes: int
    leaves: int


# The PostgreSQL advisory lock that makes hierarchy loads take turns (any 64-bit key no other code uses).
LOAD_LOCK_KEY = 0x6869_6572_6C6F_6164  # "hierload"


def _loads_one_at_a_time() -> None:
    """Wait for any other hierarchy load to commit (PostgreSQL: a transaction-level advisory lock, taken
    before any row). Two loads of one file at once (two runs uploading their hierarchy) would otherwise both
    find it missing and the second fail on the unique name and version or a concept's wnid; two files
    sharing concepts would lock them in their own orders. After the wait the second finds the first's rows
    and is the no-op a repeated load is. Loads are rare, so one lock for all of them costs nothing. (SQLite
    serializes writers on its own.)"""
    connection = connections[Hierarchy.objects.db]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOAD_LOCK_KEY])


def hierarchy_load(
    fixture: HierarchyFixture, in_use: Mapping[str, Mapping[int, str]] | None = None
) -> LoadResult:
    """Store a validated fixture (see hierarchy.fixture) as a Hierarchy with its QuestionNodes, in one transaction.

    Every node gets a concept: its synset when its id is a wnid (with is-a edges between synset nodes), else a
    local concept named by its question id, so the consensus engine has a subject for every question. Loading
    the same name and version again is a no-op when the DAG is the same and refused when it differs (bump the
    version: stored labeling states refer to the DAG they were recorded on). A file that would change the name,
    gloss or parents of a concept in use (`in_use`: wnid -> {id: name} of the datasets using it; by default what
    the registered apps say, `concepts_in_use`) is refused (ConceptConflict) and nothing is stored: one
    organizer's upload never rewrites the classes of another's dataset."""
    dag = fixture.to_dag()  # raises DagError on a structural problem the fixture parser did not catch
    with transaction.atomic():
        _loads_one_at_a_time()
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
            in_use = concepts_in_use(node.id for node in fixture.nodes)
        conflicts = concept_conflicts(fixture, in_use)
        if conflicts:
            raise ConceptConflict(conflicts)
        concepts = concepts_upsert(
            (
                {
                    "wnid": node.id,
                    "name": node.name,
                    "gloss": node.gloss,
                    "lemmas": list(node.lemmas),
                    # Is-a edges only between synsets: question ids are groupings, not concepts of WordNet.
                    "parents": [p for p in node.parents if node.wnid and WNID_RE.match(p)],
                }
                for node in fixture.nodes
            ),
            keep=in_use,
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
