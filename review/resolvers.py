"""Registry of what an ambiguous item's decision means to the pipeline that sent it.

A pipeline that queues ambiguous items with `subject={"type": T, ...}` registers a resolver for T (in its
`AppConfig.ready`, or from the app that connects it to review); `review_decide` and `review_undo` call it in
their transaction. Accept / reject on an item about a box set that box's state, unless the resolver owns it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Hold:
    """What `apply` returns instead of acting when the decision must be taken once more first: the decision row
    stays (marked held, with `detail`), the item goes back to the queue, and a second decision on it (the same
    reviewer's or another's) that agrees is acted on."""

    reason: str
    detail: dict[str, Any]


@dataclass(frozen=True)
class Resolver:
    # apply(item, decision_row) runs after the decision row exists and returns None, or a Hold.
    apply: Callable[[Any, Any], Hold | None]
    # The decisions a reviewer may take on these items (default: the item kind's, accept / reject).
    decisions: tuple[str, ...] | None = None
    # describe(item) -> what the reviewer needs to decide: {"kind": str, "question": str, "concept": Concept | None,
    # "votes": {"yes", "no", "p"} | None, "boxes": [Box, ...]} (see serializers.ReviewContextSerializer).
    describe: Callable[[Any], dict[str, Any]] | None = None
    # The pipeline sets the state of the item's box itself (through its own transitions); otherwise accept /
    # reject set it before `apply` runs.
    owns_box: bool = False
    # Why a decision on these items cannot be undone (the pipeline has acted on it), or "" when it can: the
    # undo is refused with this text, and the pages do not offer it (`review.decisions.undo_refusal`).
    undo_refused: str = ""


_resolvers: dict[str, Resolver] = {}


def register(subject_type: str, resolver: Resolver) -> None:
    if subject_type in _resolvers and _resolvers[subject_type] is not resolver:
        raise ValueError(f"a resolver for ambiguous subjects of type {subject_type!r} is already registered")
    _resolvers[subject_type] = resolver


def unregister(subject_type: str) -> None:
    _resolvers.pop(subject_type, None)


def get(subject: dict | None) -> Resolver | None:
    if not subject:
        return None
    return _resolvers.get(str(subject.get("type", "")))
