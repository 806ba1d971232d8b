"""Hierarchy fixture files: parse and validate the JSON format that `load_hierarchy` reads. Pure Python.

Format (one JSON object)::

    {"format": "crowdlabel-hierarchy/1", "name": "...", "version": "...", "description": "...",
     "nodes": [{"id": "n02084071", "name": "dog", "gloss": "...", "question": "Is there a dog?",
                "parents": ["q:carnivore"], "leaf": true}, ...]}

- `id` is a WordNet 3.0 noun id ("n" + 8 digits) when the node is a concept, otherwise a question id
  ("q:" + lowercase slug) for a question that groups concepts without being one synset.
- Leaves are the concepts being labelled and must carry WordNet ids; they are listed in the dataset's official
  class order (that order is kept). Internal nodes are questions and may or may not be concepts.
- `question` is the worker-facing wording. High-level questions must be phrased so that every leaf below them
  answers "yes" to them (is-a): a "no" prunes the whole subtree (ILSVRC §3.3.3, Appendix D).
- Validation collects every problem (bad fields, duplicate ids, unknown parents, cycles, leaves without a path
  to a root, ...) and raises one `FixtureError` whose `errors` list names the offending entries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hierarchy.algorithm import QuestionDag, QuestionNode

FORMAT = "crowdlabel-hierarchy/1"
WNID_RE = re.compile(r"^n\d{8}$")
QUESTION_ID_RE = re.compile(r"^q:[a-z0-9][a-z0-9-]*$")
NODE_FIELDS = {"id", "name", "gloss", "question", "parents", "leaf", "lemmas"}
# The longest names the database stores (hierarchy.models); longer ones are refused here, with the field named.
NAME_MAX = 200
VERSION_MAX = 50
# Text the database cannot store (NUL) or encode (lone UTF-16 surrogates, which JSON escapes can produce).
_BAD_CHARACTER = re.compile("[\x00\ud800-\udfff]")


class FixtureError(ValueError):
    """A hierarchy fixture was refused; `errors` lists every problem found."""

    def __init__(self, errors: list[str], source: str = "hierarchy fixture"):
        self.errors = errors
        lines = "\n".join(f"  - {error}" for error in errors)
        super().__init__(f"{source}: {len(errors)} problem(s):\n{lines}")


@dataclass(frozen=True)
class FixtureNode:
    id: str
    name: str
    gloss: str
    question: str
    parents: tuple[str, ...]
    leaf: bool
    # More WordNet lemmas of the synset than its display name lists (query expansion uses every one); optional.
    lemmas: tuple[str, ...] = ()

    @property
    def wnid(self) -> str | None:
        """The WordNet id when the node is a concept, else None."""
        return self.id if WNID_RE.match(self.id) else None


@dataclass(frozen=True)
class HierarchyFixture:
    name: str
    version: str
    description: str
    nodes: tuple[FixtureNode, ...]

    @property
    def leaves(self) -> tuple[FixtureNode, ...]:
        return tuple(node for node in self.nodes if node.leaf)

    def to_dag(self) -> QuestionDag:
        return QuestionDag(
            QuestionNode(id=node.id, parents=node.parents, leaf=node.leaf, question=node.question)
            for node in self.nodes
        )


def load_fixture(path: str | Path) -> HierarchyFixture:
    """Read and validate a fixture file."""
    source = Path(path).name
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FixtureError([f"cannot read JSON: {exc}"], source) from exc
    return parse_fixture(data, source)


def _text(
    entry: Mapping[str, Any],
    key: str,
    where: str,
    errors: list[str],
    required: bool = True,
    max_length: int | None = None,
) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str):
        errors.append(f"{where}: {key!r} must be a string")
        return ""
    value = value.strip()
    if required and not value:
        errors.append(f"{where}: {key!r} is missing or empty")
    if max_length is not None and len(value) > max_length:
        errors.append(f"{where}: {key!r} has {len(value)} characters; the most allowed is {max_length}")
    if _BAD_CHARACTER.search(value):
        errors.append(f"{where}: {key!r} contains a NUL character or a lone surrogate")
    return value


def parse_fixture(data: Any, source: str = "hierarchy fixture") -> HierarchyFixture:
    """Validate decoded JSON; raises FixtureError listing every problem, else returns the fixture."""
    errors: list[str] = []
    if not isinstance(data, Mapping):
        raise FixtureError(["top level must be a JSON object"], source)
    if data.get("format", FORMAT) != FORMAT:
        errors.append(f"unsupported format {data.get('format')!r} (expected {FORMAT!r})")
    name = _text(data, "name", "fixture", errors, max_length=NAME_MAX)
    version = _text(data, "version", "fixture", errors, max_length=VERSION_MAX)
    description = _text(data, "description", "fixture", errors, required=False)
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise FixtureError(errors + ["'nodes' must be a non-empty list"], source)

    nodes: list[FixtureNode] = []
    seen: dict[str, int] = {}
    for position, entry in enumerate(raw_nodes):
        where = f"node #{position}"
        if not isinstance(entry, Mapping):
            errors.append(f"{where}: must be an object")
            continue
        node_id = entry.get("id")
        if not isinstance(node_id, str) or not (WNID_RE.match(node_id) or QUESTION_ID_RE.match(node_id)):
            errors.append(
                f"{where}: id {node_id!r} is neither a WordNet id (n########) nor a question id (q:slug)"
            )
            continue
        where = f"node {node_id!r}"
        if node_id in seen:
            errors.append(f"{where}: duplicate id (also node #{seen[node_id]})")
            continue
        seen[node_id] = position
        unknown_fields = sorted(set(entry) - NODE_FIELDS)
        if unknown_fields:
            errors.append(f"{where}: unknown field(s) {unknown_fields}")
        parents = entry.get("parents", [])
        if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
            errors.append(f"{where}: 'parents' must be a list of ids")
            parents = []
        if len(set(parents)) != len(parents):
            errors.append(f"{where}: repeated parent in {parents}")
        leaf = entry.get("leaf", False)
        if not isinstance(leaf, bool):
            errors.append(f"{where}: 'leaf' must be true or false")
            leaf = False
        if leaf and not WNID_RE.match(node_id):
            errors.append(f"{where}: a leaf must be a concept with a WordNet id")
        lemmas = entry.get("lemmas", [])
        if not isinstance(lemmas, list) or not all(isinstance(x, str) and x.strip() for x in lemmas):
            errors.append(f"{where}: 'lemmas' must be a list of non-empty strings")
            lemmas = []
        nodes.append(
            FixtureNode(
                id=node_id,
                name=_text(entry, "name", where, errors, max_length=NAME_MAX),
                gloss=_text(entry, "gloss", where, errors, required=False),
                question=_text(entry, "question", where, errors),
                parents=tuple(dict.fromkeys(parents)),
                leaf=leaf,
                lemmas=tuple(dict.fromkeys(" ".join(x.split()) for x in lemmas)),
            )
        )

    errors.extend(_structure_errors(nodes))
    if errors:
        raise FixtureError(errors, source)
    return HierarchyFixture(name=name, version=version, description=description, nodes=tuple(nodes))


def _structure_errors(nodes: list[FixtureNode]) -> list[str]:
    errors: list[str] = []
    by_id = {node.id: node for node in nodes}
    children: dict[str, list[str]] = {node.id: [] for node in nodes}
    for node in nodes:
        for parent in node.parents:
            if parent == node.id:
                errors.append(f"node {node.id!r}: is its own parent")
            elif parent not in by_id:
                errors.append(f"node {node.id!r}: unknown parent {parent!r}")
            else:
                children[parent].append(node.id)
    for node in nodes:
        if node.leaf and children[node.id]:
            errors.append(f"node {node.id!r}: marked leaf but has children {sorted(children[node.id])}")
        if not node.leaf and not children[node.id]:
            errors.append(f"node {node.id!r}: question node without children (mark it leaf or remove it)")
    if not any(not node.parents for node in nodes):
        errors.append("no root: every node has a parent")

    # Cycles: depth-first search with colours; report each cycle once by its members.
    colour: dict[str, int] = {}
    reported: set[frozenset[str]] = set()
    for start in by_id:
        if start in colour:
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[str] = []
        while stack:
            current, i = stack.pop()
            if i == 0:
                colour[current] = 1
                path.append(current)
            kids = children[current]
            if i < len(kids):
                stack.append((current, i + 1))
                child = kids[i]
                if colour.get(child) == 1:
                    cycle = path[path.index(child) :]
                    if frozenset(cycle) not in reported:
                        reported.add(frozenset(cycle))
                        errors.append(f"cycle: {' -> '.join(cycle + [child])}")
                elif child not in colour:
                    stack.append((child, 0))
            else:
                colour[current] = 2
                path.pop()

    # A node reaches a root when it is one or when some parent (known) reaches a root.
    reaches: set[str] = {node.id for node in nodes if not node.parents}
    grew = True
    while grew:
        grew = False
        for node in nodes:
            if node.id not in reaches and any(p in reaches for p in node.parents):
                reaches.add(node.id)
                grew = True
    for node in nodes:
        if node.leaf and node.id not in reaches:
            errors.append(f"leaf {node.id!r} ({node.name}): no path to a root")
    return errors


def fixture_to_dict(fixture: HierarchyFixture) -> dict[str, Any]:
    """The JSON form of a fixture (inverse of `parse_fixture`)."""
    return {
        "format": FORMAT,
        "name": fixture.name,
        "version": fixture.version,
        "description": fixture.description,
        "nodes": [
            {
                "id": node.id,
                "name": node.name,
                "gloss": node.gloss,
                "question": node.question,
                "parents": list(node.parents),
                "leaf": node.leaf,
                **({"lemmas": list(node.lemmas)} if node.lemmas else {}),
            }
            for node in fixture.nodes
        ],
    }
