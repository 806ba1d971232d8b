"""The queue's contract with the apps above it, as plain data: what a lease policy says about one lease, what a
kind handler or submit interceptor changes on a task, what a submit returns, and the Idempotency-Key.

Pure: no Django import. The queue turns these values into its own SQL; nobody hands it SQL text, and nothing
is stashed on a worker or an assignment to pass between a policy and the queue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# The pool of ordinary tasks. A task in any other pool is leased only through a `Draw` naming it.
OPEN_POOL = ""
IDEMPOTENCY_KEY_MAX = 128


class _Keep:
    """`TaskChange.result` when the change leaves the result as it is (None is a result of its own)."""

    _instance: _Keep | None = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = _Keep()


@dataclass(frozen=True)
class Draw:
    """Lease from a reserved pool instead of the open one: the first free task of `task_ids` (all in `pool`)
    that the worker may take, stamped like any lease. `note` is stored on the assignment for the policy that
    drew it (the browser never sees it); when none of the tasks is free the lease goes on as usual."""

    pool: str
    task_ids: tuple[int, ...]
    note: str = ""
    # False: only looked up, never leased (a policy that looked candidates up but is not drawing this time says so,
    # and the queue runs the same statements either way: see `services.task_lease_next`).
    lease: bool = True
    # For a lease of several tasks (`LeaseRequest.count`): the 0-based places in it that take a drawn task,
    # ascending; the others are ordinary tasks. A single lease ignores it (`lease` says whether it draws).
    slots: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.pool:
            raise ValueError("a draw names a reserved pool (the open pool is leased without one)")
        if list(self.slots) != sorted(set(self.slots)) or any(s < 0 for s in self.slots):
            raise ValueError("a draw's slots are distinct places in ascending order")


@dataclass(frozen=True)
class LeaseTerms:
    """What a lease policy says about one lease of one worker: the datasets they may take nothing from, the
    (dataset, topic) pairs they may not take now, the topics they may take in no dataset now but the (dataset,
    topic) pairs `kept_in` names, the only task kinds they can take at all (None: any; a worker who works only
    inside provider sessions takes only their sessions' kinds), and optionally a draw from a reserved pool."""

    withheld_datasets: frozenset[int] = frozenset()
    withheld_topics: frozenset[tuple[int, str]] = frozenset()
    withheld_topics_everywhere: frozenset[str] = frozenset()
    # (dataset, topic) pairs where a topic of `withheld_topics_everywhere` stays on offer.
    kept_in: frozenset[tuple[int, str]] = frozenset()
    draw: Draw | None = None
    only_kinds: frozenset[str] | None = None
    # The most tasks one lease may hand out (None: as many as asked): a policy serving something that must go
    # one task at a time (a qualification attempt, balanced as it is answered) says 1.
    most: int | None = None

    def merge(self, other: LeaseTerms) -> LeaseTerms:
        """Both policies' conditions hold; the first draw wins. A pair stays on offer only where no policy
        withholding its topic everywhere keeps it back."""
        if self.only_kinds is None or other.only_kinds is None:
            kinds = self.only_kinds if other.only_kinds is None else other.only_kinds
        else:
            kinds = self.only_kinds & other.only_kinds
        return LeaseTerms(
            withheld_datasets=self.withheld_datasets | other.withheld_datasets,
            withheld_topics=self.withheld_topics | other.withheld_topics,
            withheld_topics_everywhere=self.withheld_topics_everywhere | other.withheld_topics_everywhere,
            kept_in=frozenset(
                (dataset, topic)
                for dataset, topic in self.kept_in | other.kept_in
                if all(
                    topic not in t.withheld_topics_everywhere or (dataset, topic) in t.kept_in
                    for t in (self, other)
                )
            ),
            draw=self.draw if self.draw is not None else other.draw,
            only_kinds=kinds,
            most=min((m for m in (self.most, other.most) if m is not None), default=None),
        )

    @classmethod
    def combined(cls, terms: Iterable[LeaseTerms | None]) -> LeaseTerms:
        out = cls()
        for t in terms:
            if t is not None:
                out = out.merge(t)
        return out


@dataclass(frozen=True)
class LeaseRequest:
    """What the worker asked for: task kinds (None: any) and a dataset (None: any); `datasets` (None: any)
    narrows it to a session's scope (a study link's datasets), on top of the worker's own grants; `count`,
    how many tasks this one lease hands out at most (`task_lease_many`). `look_ahead` marks a request made for
    the worker by the starved sweep (`tasks_reachable`: could they be handed the task at all?), not a lease:
    a policy whose leases offer something by chance answers as if the chance went against the worker (a chance
    the sweep cannot wait for)."""

    kinds_wanted: tuple[str, ...] | None
    dataset_id: int | None
    datasets: tuple[int, ...] | None = None
    count: int = 1
    look_ahead: bool = False


@dataclass(frozen=True)
class TaskChange:
    """What a kind handler (or a submit interceptor) changes on the task it was given, which the queue writes in
    the submit's own UPDATE. Fields left at their default stay as they are (the queue has already counted the
    answer and reopened the task)."""

    state: str | None = None
    result: Any = KEEP

    @property
    def empty(self) -> bool:
        return self.state is None and self.result is KEEP


@dataclass(frozen=True)
class Lease:
    """A lease as the lease statement hands it out: the new assignment (its task and the task's subjects
    loaded) and what the worker's page shows with it that the statement selected too, so the page costs no
    round trip for them: the task's shown example images as (id, polarity, caption, width, height) rows, what
    counts first, and the organizer's instructions for its stage ("" when none). None where they were not
    selected (the portable lease selects no examples, a lease kept from an earlier request neither): the page
    looks them up."""

    assignment: Any
    examples: tuple[tuple[Any, ...], ...] | None = None
    instructions: str | None = None


@dataclass(frozen=True)
class SubmitResult:
    """A submit's outcome: the stored assignment, whether this was a replay of a stored answer, what the apps
    above the queue add to the response (qualification feedback), computed in the submit's transaction, and,
    when the submit asked for one, the worker's next lease (None: no task is available now)."""

    assignment: Any
    replayed: bool
    extras: Mapping[str, Any] = field(default_factory=dict)
    next_lease: Lease | None = None


class KeyInvalid(ValueError):
    """An Idempotency-Key that is missing or too long."""


@dataclass(frozen=True)
class IdempotencyKey:
    """A submit's Idempotency-Key, checked once where it enters (the API header, a provider session)."""

    value: str

    @classmethod
    def parse(cls, raw: str | IdempotencyKey | None) -> IdempotencyKey:
        if isinstance(raw, IdempotencyKey):
            return raw
        key = (raw or "").strip()
        if not key or len(key) > IDEMPOTENCY_KEY_MAX:
            raise KeyInvalid(f"an Idempotency-Key of 1 to {IDEMPOTENCY_KEY_MAX} characters is required")
        return cls(key)
