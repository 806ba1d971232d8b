"""Events gold announces to the apps above it (crowd pays and qualifies workers on marketplaces): a small
explicit registry, so gold never imports them. Subscribers register in their `AppConfig.ready`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# (worker, dataset_id, kind, task_kind) -> None: the worker passed the qualification set of gold kind `kind`
# (a question kind, e.g. image_verify), served as tasks of `task_kind` (the queue's kind, e.g. question).
# Called inside the transaction that settled the attempt, so a subscriber that records work (an outbox row)
# commits or rolls back with it.
QualificationPassed = Callable[[Any, int, str, str], None]

qualification_passed_hooks: list[QualificationPassed] = []


def qualification_passed_register(fn: QualificationPassed) -> QualificationPassed:
    """Subscribe to "this worker passed the qualification set of (dataset, kind)"; registering twice is a
    no-op."""
    if fn not in qualification_passed_hooks:
        qualification_passed_hooks.append(fn)
    return fn


def qualification_passed(worker, dataset_id: int, kind: str, task_kind: str) -> None:
    for hook in qualification_passed_hooks:
        hook(worker, dataset_id, kind, task_kind)
