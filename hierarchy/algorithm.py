"""Full multi-label annotation of one image by hierarchical yes/no questions (ILSVRC §3.3.3, Algorithm 1).

Owns the question DAG, the resumable per-image labeling state, yes/no propagation and the pluggable order
in which questions are asked. Pure Python: no framework imports.

Semantics (over any DAG; a node may have several parents):
- A question node is "present" when at least one object of its kind is in the image; every node below it is
  a kind of it (is-a). Hence a "no" on a node makes every descendant "no" (ILSVRC Algorithm 1), and, by the
  same is-a reading, a "yes" on a node makes every ancestor "yes" (a dog in the image means an animal is).
- Candidates (the Algorithm 1 frontier) are the undecided nodes that are roots or have at least one "yes"
  parent. An undecided node never has a "no" ancestor (that "no" would already have decided it), so no
  question below a "no" can ever be asked.
- With both propagations no answer can contradict an earlier one: a node is asked only while undecided, a
  "yes" decides all its ancestors and a "no" all its descendants. A node with two parents becomes a
  candidate as soon as one parent is "yes"; if the other parent is asked first and is "no", the node is
  pruned without being asked. This is why the order matters on DAGs (ask likely-"no" parents first).
- When no candidate is left every node is decided (an undecided node always has an undecided root or a
  "yes" parent somewhere above it), so every leaf ends labelled.
- An order may also ask an undecided node below the frontier (a "shortcut", Deng et al. 2014): its "yes"
  then decides its undecided ancestors without asking them.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol

STATE_FORMAT = 1


class DagError(ValueError):
    """The nodes do not form a valid question DAG; `problems` names every offending entry."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid question DAG: " + "; ".join(problems))


@dataclass(frozen=True)
class QuestionNode:
    """One yes/no question. Leaves are the concepts being labelled; internal nodes group them."""

    id: str
    parents: tuple[str, ...] = ()
    leaf: bool = False
    question: str = ""


class QuestionDag:
    """An immutable, validated question DAG with precomputed ancestors, descendants and depths."""

    def __init__(self, nodes: Iterable[QuestionNode]):
        node_list = list(nodes)
        problems: list[str] = []
        self._nodes: dict[str, QuestionNode] = {}
        for node in node_list:
            if node.id in self._nodes:
                problems.append(f"duplicate node id {node.id!r}")
            self._nodes[node.id] = node
        children: dict[str, list[str]] = {node_id: [] for node_id in self._nodes}
        for node in self._nodes.values():
            for parent in node.parents:
                if parent not in self._nodes:
                    problems.append(f"node {node.id!r} has unknown parent {parent!r}")
                elif parent == node.id:
                    problems.append(f"node {node.id!r} is its own parent")
                elif node.id not in children[parent]:
                    children[parent].append(node.id)
        for node_id, kids in children.items():
            node = self._nodes[node_id]
            if node.leaf and kids:
                problems.append(f"leaf {node_id!r} has children {sorted(kids)}")
            if not node.leaf and not kids:
                problems.append(f"question node {node_id!r} has no children")
        if problems:
            raise DagError(problems)
        self.children: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in children.items()}
        self.index: dict[str, int] = {node_id: i for i, node_id in enumerate(self._nodes)}
        self.topological = self._topological_order()
        self.roots: tuple[str, ...] = tuple(n for n in self._nodes if not self._nodes[n].parents)
        self.leaves: tuple[str, ...] = tuple(n for n in self._nodes if self._nodes[n].leaf)
        self._ancestors: dict[str, frozenset[str]] = {}
        for node_id in self.topological:
            above: set[str] = set()
            for parent in self._nodes[node_id].parents:
                above.add(parent)
                above |= self._ancestors[parent]
            self._ancestors[node_id] = frozenset(above)
        self._descendants: dict[str, frozenset[str]] = {}
        for node_id in reversed(self.topological):
            below: set[str] = set()
            for child in self.children[node_id]:
                below.add(child)
                below |= self._descendants[child]
            self._descendants[node_id] = frozenset(below)
        # Depth = shortest distance from a root: the round in which breadth-first reaches the node.
        self.depth: dict[str, int] = {}
        queue = deque(self.roots)
        for root in self.roots:
            self.depth[root] = 0
        while queue:
            current = queue.popleft()
            for child in self.children[current]:
                if child not in self.depth:
                    self.depth[child] = self.depth[current] + 1
                    queue.append(child)
        digest = hashlib.sha256()
        for node_id in sorted(self._nodes):
            node = self._nodes[node_id]
            digest.update(f"{node_id}|{','.join(sorted(node.parents))}|{int(node.leaf)}\n".encode())
        self.fingerprint = digest.hexdigest()[:16]

    def _topological_order(self) -> tuple[str, ...]:
        # Kahn's algorithm, stable in input order; whatever is left over lies on or below a cycle.
        remaining = {n: len(set(self._nodes[n].parents)) for n in self._nodes}
        ready = deque(n for n, count in remaining.items() if count == 0)
        order: list[str] = []
        while ready:
            current = ready.popleft()
            order.append(current)
            for child in self.children[current]:
                remaining[child] -= 1
                if remaining[child] == 0:
                    ready.append(child)
        if len(order) < len(self._nodes):
            stuck = sorted(n for n in self._nodes if n not in set(order))
            raise DagError([f"cycle through or above nodes {stuck}"])
        return tuple(order)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._nodes

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._nodes)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QuestionDag) and other.fingerprint == self.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def node(self, node_id: str) -> QuestionNode:
        return self._nodes[node_id]

    def ancestors(self, node_id: str) -> frozenset[str]:
        return self._ancestors[node_id]

    def descendants(self, node_id: str) -> frozenset[str]:
        return self._descendants[node_id]

    def leaves_under(self, node_id: str) -> tuple[str, ...]:
        """Leaves at or below `node_id`, in DAG order."""
        below = self._descendants[node_id] | {node_id}
        return tuple(leaf for leaf in self.leaves if leaf in below)

    def restricted_to(self, leaf_ids: Iterable[str]) -> QuestionDag:
        """The sub-DAG that labels only `leaf_ids`: drops questions with none of them below, and bypasses
        questions left with a single child (asking them would never save a question)."""
        keep_leaves = set(leaf_ids)
        unknown = keep_leaves - set(self.leaves)
        if unknown:
            raise DagError([f"not a leaf: {leaf!r}" for leaf in sorted(unknown)])
        kept = {n for n in self._nodes if keep_leaves & set(self.leaves_under(n))}
        parents = {n: [p for p in self._nodes[n].parents if p in kept] for n in self.topological if n in kept}
        collapsed = True
        while collapsed:
            collapsed = False
            kids: dict[str, list[str]] = {n: [] for n in parents}
            for node_id, ps in parents.items():
                for p in ps:
                    kids[p].append(node_id)
            for node_id in parents:
                if not self._nodes[node_id].leaf and len(kids[node_id]) == 1:
                    (only,) = kids[node_id]
                    lifted = [p for p in parents[only] if p != node_id]
                    lifted += [p for p in parents[node_id] if p not in lifted]
                    parents[only] = lifted
                    del parents[node_id]
                    collapsed = True
                    break
        return QuestionDag(
            replace(self._nodes[n], parents=tuple(parents[n])) for n in self._nodes if n in parents
        )


class Source(StrEnum):
    ASKED = "asked"
    NO_FROM_ANCESTOR = "no_from_ancestor"  # an ancestor was answered "no"
    YES_FROM_DESCENDANT = "yes_from_descendant"  # a descendant was answered "yes"
    # Model-inferred, not the crowd's: a calibrated rule on a model's scores answered "no" without asking
    # (multilabel/model_scores.py), and the nodes below such a node.
    SKIPPED = "skipped"
    NO_FROM_SKIPPED = "no_from_skipped"


@dataclass(frozen=True)
class Decision:
    """The label of one node with its provenance: asked, or implied by the answer to node `via`."""

    node: str
    present: bool
    source: Source
    via: str | None = None


@dataclass(frozen=True)
class LabelingState:
    """Where one image stands in Algorithm 1. Treat as immutable: `answer` returns a new state."""

    dag: QuestionDag
    decisions: Mapping[str, Decision] = field(default_factory=dict)
    answers: tuple[tuple[str, bool], ...] = ()  # asked nodes in order, with the decided answer
    # Nodes answered "no" without asking (`skip`), each with the number of asked answers before it.
    skipped: tuple[tuple[str, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form. Only the asked answers and the skips are stored: replaying them rebuilds every
        decision. A state without skips has no "skipped" key, as before skips existed."""
        data: dict[str, Any] = {
            "format": STATE_FORMAT,
            "dag": self.dag.fingerprint,
            "answers": [{"node": node, "present": present} for node, present in self.answers],
        }
        if self.skipped:
            data["skipped"] = [{"node": node, "after": after} for node, after in self.skipped]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], dag: QuestionDag) -> LabelingState:
        """Resume a state saved by `to_dict`; refuses a state recorded against a different DAG."""
        if data.get("format") != STATE_FORMAT:
            raise ValueError(f"unsupported labeling state format {data.get('format')!r}")
        if data.get("dag") != dag.fingerprint:
            raise ValueError(
                f"labeling state was recorded on hierarchy {data.get('dag')!r}, not {dag.fingerprint!r}"
            )
        skips: dict[int, list[str]] = {}
        for item in data.get("skipped", []):
            skips.setdefault(int(item["after"]), []).append(str(item["node"]))
        state = start(dag)
        for index, item in enumerate(data.get("answers", [])):
            for node in skips.pop(index, []):
                state = skip(state, node)
            state = answer(state, str(item["node"]), bool(item["present"]))
        for after in sorted(skips):
            if after != len(state.answers):
                raise ValueError(f"skip recorded after answer {after}, but only {len(state.answers)} answers")
            for node in skips[after]:
                state = skip(state, node)
        return state

    def truncated(self, asked: int) -> LabelingState:
        """The state before asked answer number `asked` was applied: earlier answers and the skips before it."""
        data = self.to_dict()
        data["answers"] = data["answers"][:asked]
        if self.skipped:
            data["skipped"] = [item for item in data["skipped"] if item["after"] <= asked]
        return LabelingState.from_dict(data, self.dag)


def start(dag: QuestionDag) -> LabelingState:
    return LabelingState(dag=dag)


def candidates(state: LabelingState) -> tuple[str, ...]:
    """The Algorithm 1 frontier: undecided roots and undecided children of a "yes", in DAG order."""
    dag, decided = state.dag, state.decisions
    found: set[str] = {root for root in dag.roots if root not in decided}
    for node_id, decision in decided.items():
        if decision.present:
            found.update(child for child in dag.children[node_id] if child not in decided)
    return tuple(sorted(found, key=dag.index.__getitem__))


def undecided(state: LabelingState) -> tuple[str, ...]:
    return tuple(n for n in state.dag if n not in state.decisions)


def is_done(state: LabelingState) -> bool:
    return len(state.decisions) == len(state.dag)


def _require_undecided(state: LabelingState, node: str) -> None:
    """Refuse a node the DAG does not hold (KeyError) or one already decided (ValueError)."""
    if node not in state.dag:
        raise KeyError(f"unknown question node {node!r}")
    if node in state.decisions:
        previous = state.decisions[node]
        raise ValueError(f"node {node!r} is already decided ({previous.source}, via {previous.via!r})")


def answer(state: LabelingState, node: str, present: bool) -> LabelingState:
    """Record the decided answer to `node` and propagate it: "no" down, "yes" up."""
    dag = state.dag
    _require_undecided(state, node)
    decisions = dict(state.decisions)
    decisions[node] = Decision(node, present, Source.ASKED)
    if present:
        implied, source = dag.ancestors(node), Source.YES_FROM_DESCENDANT
    else:
        implied, source = dag.descendants(node), Source.NO_FROM_ANCESTOR
    for other in implied:
        # Already-decided nodes agree by construction (see the module docstring).
        if other not in decisions:
            decisions[other] = Decision(other, present, source, via=node)
    return LabelingState(
        dag=dag, decisions=decisions, answers=state.answers + ((node, present),), skipped=state.skipped
    )


def skip(state: LabelingState, node: str) -> LabelingState:
    """Decide `node` "no" without asking it (a calibrated rule on a model's scores allowed it) and propagate the
    "no" down, marked model-inferred: `Source.SKIPPED` on the node, `Source.NO_FROM_SKIPPED` below it."""
    dag = state.dag
    _require_undecided(state, node)
    decisions = dict(state.decisions)
    decisions[node] = Decision(node, False, Source.SKIPPED)
    for other in dag.descendants(node):
        if other not in decisions:
            decisions[other] = Decision(other, False, Source.NO_FROM_SKIPPED, via=node)
    return LabelingState(
        dag=dag,
        decisions=decisions,
        answers=state.answers,
        skipped=state.skipped + ((node, len(state.answers)),),
    )


class Order(Protocol):
    """Picks the next node to ask in a state that is not done: a candidate, or an undecided shortcut."""

    def __call__(self, state: LabelingState) -> str: ...


def breadth_first(state: LabelingState) -> str:
    """ILSVRC's order: shallowest candidate first, ties in DAG (fixture) order."""
    dag = state.dag
    return min(candidates(state), key=lambda n: (dag.depth[n], dag.index[n]))


def next_question(state: LabelingState, order: Order = breadth_first) -> str | None:
    """The node to ask next, or None when every node is decided."""
    if is_done(state):
        return None
    chosen = order(state)
    if chosen in state.decisions or chosen not in state.dag:
        raise ValueError(f"order chose {chosen!r}, which is not an undecided node")
    return chosen


def run(state: LabelingState, oracle: Callable[[str], bool], order: Order = breadth_first) -> LabelingState:
    """Ask questions until done; `oracle(node)` returns the decided answer (consensus of workers)."""
    while (node := next_question(state, order)) is not None:
        state = answer(state, node, oracle(node))
    return state


@dataclass(frozen=True)
class LeafLabel:
    """Final label of one (image, leaf concept): asked, or "no" propagated from ancestor `via`."""

    leaf: str
    present: bool
    source: Source
    via: str | None = None


def leaf_labels(state: LabelingState) -> dict[str, LeafLabel]:
    """Labels of every leaf, in DAG order. Raises if the image is not fully labelled yet."""
    missing = [leaf for leaf in state.dag.leaves if leaf not in state.decisions]
    if missing:
        raise ValueError(f"{len(missing)} leaves are still undecided, e.g. {missing[:5]}")
    return {
        leaf: LeafLabel(leaf, d.present, d.source, d.via)
        for leaf in state.dag.leaves
        for d in (state.decisions[leaf],)
    }


def present_leaves(state: LabelingState) -> tuple[str, ...]:
    return tuple(leaf for leaf in state.dag.leaves if (d := state.decisions.get(leaf)) and d.present)
