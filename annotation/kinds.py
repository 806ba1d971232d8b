"""The registry of micro-task kinds: how each kind validates an answer, reacts to it and shows itself.

Higher apps (consensus, the box pipeline, hierarchy questions, gold) register their kinds here at start-up
(`AppConfig.ready`), so the queue never imports them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .models import Assignment, Task
    from .queue.contract import TaskChange
    from .queue.sqlrows import Writes


class AnswerInvalid(Exception):
    """The submitted answer does not fit the task kind; the message says what is wrong."""


class AnswerStands(Exception):
    """A submitted answer cannot be taken back (its question is decided); the message says why."""


def yes_no_answer(task: Task, answer: Any) -> dict[str, Any]:
    """The answer of every yes/no kind: `{"answer": true|false}`, nothing else stored."""
    if not isinstance(answer, dict) or "answer" not in answer:
        raise AnswerInvalid('the answer must be an object like {"answer": true}')
    value = answer["answer"]
    if not isinstance(value, bool):
        raise AnswerInvalid(f'"answer" must be true or false, got {value!r}')
    return {"answer": value}


def _no_public_payload(task: Task) -> dict[str, Any]:
    return dict(task.payload)


@dataclass(frozen=True)
class TaskKind:
    """A kind of micro-task.

    - `clean_answer(task, answer)` returns the answer to store, or raises AnswerInvalid.
    - `on_submit(assignment, writes)` runs inside the submit transaction with the task row locked and returns
      the `TaskChange` to write (state, result), or None for none: the queue has already counted the answer and
      reopened the task, and writes the change with its own fields in one UPDATE. `writes` is the submit's
      `sqlrows.Writes`: what the handler holds there goes with the task's UPDATE and the counters, at the one
      point where the submit sends them; what it writes otherwise is written at once.
    - `public_payload(task)` is everything the worker's browser gets about the task besides the image.
    - `on_withdraw(assignment)`, for kinds whose answers can be taken back within the undo window, runs in the
      undo's transaction with the task row locked: it reverts what `on_submit` did upstream and returns the
      `TaskChange` that puts the task back as it was without this answer, or raises AnswerStands. A kind
      without one keeps every answer.
    """

    name: str
    title: str
    clean_answer: Callable[[Task, Any], dict[str, Any]]
    on_submit: Callable[[Assignment, Writes], TaskChange | None]
    public_payload: Callable[[Task], dict[str, Any]] = _no_public_payload
    on_withdraw: Callable[[Assignment], TaskChange] | None = None


_registry: dict[str, TaskKind] = {}


def register(kind: TaskKind) -> TaskKind:
    existing = _registry.get(kind.name)
    if existing is not None and existing != kind:
        raise ValueError(f"task kind {kind.name!r} is already registered")
    _registry[kind.name] = kind
    return kind


def get(name: str) -> TaskKind:
    try:
        return _registry[name]
    except KeyError:
        raise LookupError(
            f"unknown task kind {name!r}; known kinds: {', '.join(sorted(_registry))}"
        ) from None


def names() -> list[str]:
    return sorted(_registry)
