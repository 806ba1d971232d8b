"""Events the consensus engine announces (a question was decided) and the registry higher apps subscribe to.

Pipelines that ask binary questions (verification, the box pipeline, hierarchy questions) live above consensus,
so consensus never imports them: they call `subscribe(kind, handler)` in their `AppConfig.ready`. Handlers run
inside the transaction that decided the question (with its rows locked), so what they create commits or rolls
back with the decision; slow work belongs in a Celery task the handler enqueues with `transaction.on_commit`.
A decision made by a submit may not be written yet when it is announced: see `QuestionDecided.writes`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from annotation.queue.sqlrows import Writes

    from .models import Question, QuestionDecision


@dataclass(frozen=True)
class QuestionDecided:
    question: Question
    decision: QuestionDecision
    # The question's state before this decision: only a question that was in review can have a review item
    # to settle (review dismisses it at a verdict without a reviewer, and at a reopening).
    previous_state: str = ""
    # A submit's writes, holding the question's verdict and the decision row (None: they are written already).
    # A handler may add its own to them; one that reads rows they change sends them first (`writes_send`).
    writes: Writes | None = None

    def writes_send(self) -> None:
        """Send the writes the event carries (the verdict, the decision row...) before reading what they change."""
        if self.writes is not None:
            self.writes.send()


Handler = Callable[[QuestionDecided], None]
ANY_KIND = "*"

_handlers: dict[str, list[Handler]] = {}


def subscribe(kind: str, handler: Handler) -> Handler:
    """Call `handler` for every decided question of `kind` (a QuestionKind value, or "*" for all).
    Subscribing the same handler twice is a no-op, so `ready()` running twice is harmless."""
    handlers = _handlers.setdefault(kind, [])
    if handler not in handlers:
        handlers.append(handler)
    return handler


def unsubscribe(kind: str, handler: Handler) -> None:
    handlers = _handlers.get(kind, [])
    if handler in handlers:
        handlers.remove(handler)


def announce(event: QuestionDecided) -> None:
    for handler in [*_handlers.get(event.question.kind, ()), *_handlers.get(ANY_KIND, ())]:
        handler(event)


@dataclass(frozen=True)
class QuestionReopened:
    """A decided question is collecting votes again: voided votes (a worker found unreliable) no longer decide
    it. Whoever acted on its verdict must stop resting on it; its next decision is announced as usual."""

    question: Question
    previous_state: str = ""  # the decided state it leaves, as in QuestionDecided


ReopenHandler = Callable[[QuestionReopened], None]
_reopen_handlers: dict[str, list[ReopenHandler]] = {}


def subscribe_reopened(kind: str, handler: ReopenHandler) -> ReopenHandler:
    """Call `handler` whenever a question of `kind` is reopened (idempotent, like `subscribe`)."""
    handlers = _reopen_handlers.setdefault(kind, [])
    if handler not in handlers:
        handlers.append(handler)
    return handler


def announce_reopened(event: QuestionReopened) -> None:
    for handler in [*_reopen_handlers.get(event.question.kind, ()), *_reopen_handlers.get(ANY_KIND, ())]:
        handler(event)
