"""Events of full multi-label annotation that other apps react to: an image finished Algorithm 1 and these leaf
classes are present (the box pipeline queues a box job per (image, class)).

Announced explicitly by the labeling service (no Django signals), inside the transaction that stores the final
labels: what a handler creates commits or rolls back with them. Slow work belongs in a Celery task the handler
enqueues with `transaction.on_commit`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class LeavesPresent:
    """Image `image_id` of dataset `dataset_id` was fully labelled with hierarchy `hierarchy_id`; `concept_ids`
    are the leaf concepts labelled "yes" (possibly none)."""

    dataset_id: int
    image_id: int
    hierarchy_id: int
    labeling_id: int
    concept_ids: tuple[int, ...]


Handler = Callable[[LeavesPresent], None]

_handlers: list[Handler] = []


def subscribe(handler: Handler) -> Handler:
    """Call `handler` for every finished image. Subscribing twice is a no-op (`ready()` may run twice)."""
    if handler not in _handlers:
        _handlers.append(handler)
    return handler


def unsubscribe(handler: Handler) -> None:
    if handler in _handlers:
        _handlers.remove(handler)


def announce(event: LeavesPresent) -> None:
    for handler in list(_handlers):
        handler(event)
