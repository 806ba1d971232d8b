"""Extension points of the queue for higher apps (gold): lease hooks, task filters, submit interceptors and
the extras of lease and submit responses. The queue calls them; it never imports the apps that register them.

Register in `AppConfig.ready`; registering the same callable twice is a no-op. Submit interceptors, extras and
unanswered-lease hooks run inside the queue's transaction, so what they write commits or rolls back with the answer. Lease hooks
and task filters run before the lease statement, outside any transaction of the queue's (on PostgreSQL the
lease is a single statement): a lease hook that writes opens its own `transaction.atomic()`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .models import Assignment

# (worker, kinds_wanted, dataset_id, now) -> an Assignment it leased instead of the normal next task, or None.
LeaseHook = Callable[[Any, "list[str] | None", "int | None", datetime], "Assignment | None"]
# (worker, connection) -> SQL conditions on the task table aliased `t`, each with its parameters, that keep out
# the tasks this worker must not lease. SQL rather than querysets: the lease statement is built per request
# and the ORM's compile time dominated it.
TaskFilter = Callable[[Any, Any], "list[tuple[str, list]]"]
# (assignment being submitted, task row locked) -> True when it handled the answer (the kind's on_submit
# is then skipped).
SubmitInterceptor = Callable[["Assignment"], bool]
# (submitted assignment) -> extra keys for the submit response (e.g. qualification feedback), or {}.
SubmitExtras = Callable[["Assignment"], dict[str, Any]]
# (leased assignment, as the worker's browser receives it) -> extra keys for that view (e.g. that the task is a
# training question of a qualification attempt the worker is taking), or {}. Runs for every lease alike.
LeaseExtras = Callable[["Assignment"], dict[str, Any]]

# (ids of tasks whose lease just ended without an answer: expired or skipped, now open again, rows locked)
# -> None; may close tasks that must not go back to the queue (gold served to one worker). The lease's own
# reclaim of an expired lease does not call it: it only reaches tasks the task filters let through, and hands
# them straight to the next worker.
UnansweredHook = Callable[["list[int]"], None]

lease_hooks: list[LeaseHook] = []
unanswered_hooks: list[UnansweredHook] = []
task_filters: list[TaskFilter] = []
submit_interceptors: list[SubmitInterceptor] = []
submit_extras: list[SubmitExtras] = []
lease_extras: list[LeaseExtras] = []


def _add(registry: list, fn):
    if fn not in registry:
        registry.append(fn)
    return fn


def register_lease_hook(fn: LeaseHook) -> LeaseHook:
    return _add(lease_hooks, fn)


def register_unanswered_hook(fn: UnansweredHook) -> UnansweredHook:
    return _add(unanswered_hooks, fn)


def register_task_filter(fn: TaskFilter) -> TaskFilter:
    return _add(task_filters, fn)


def register_submit_interceptor(fn: SubmitInterceptor) -> SubmitInterceptor:
    return _add(submit_interceptors, fn)


def register_submit_extras(fn: SubmitExtras) -> SubmitExtras:
    return _add(submit_extras, fn)


def register_lease_extras(fn: LeaseExtras) -> LeaseExtras:
    return _add(lease_extras, fn)
