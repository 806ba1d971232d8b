"""Worker instructions per dataset and stage (`TaskInstructions`): organizers write them (the settings page's
editor, through the organizer API), every task of the stage carries them to the worker's browser, which shows
them above the task and in the help sheet. Plain text: stored as typed (trimmed), rendered by the pages as text
nodes only (paragraphs and "- " bullet lines), so markup in it is shown, never run. Like the example images,
the lookup knows only the dataset and the stage, so gold and ordinary tasks carry the same text."""

from __future__ import annotations

from django.db import transaction

from config.textcheck import text_problem

from .counters import task_stage
from .models import INSTRUCTIONS_MAX_CHARS, Dataset, TaskInstructions


class InstructionsRefused(ValueError):
    """The text cannot be stored; the message says why."""


def instructions_set(*, dataset: Dataset, kind: str, text: str, user) -> TaskInstructions | None:
    """Store the instructions of (dataset, stage `kind`); blank text removes them. Returns the row, or None
    once removed. The caller checks that `kind` is a stage its workers can meet."""
    text = text.replace("\r\n", "\n").strip()
    problem = text_problem(text)
    if problem:
        raise InstructionsRefused(f"the text {problem}")
    if len(text) > INSTRUCTIONS_MAX_CHARS:
        raise InstructionsRefused(f"at most {INSTRUCTIONS_MAX_CHARS} characters; this text has {len(text)}")
    with transaction.atomic():
        if not text:
            TaskInstructions.objects.filter(dataset=dataset, kind=kind).delete()
            return None
        row, _ = TaskInstructions.objects.update_or_create(
            dataset=dataset, kind=kind, defaults={"text": text, "updated_by": user}
        )
    return row


def task_instructions(task, leased: str | None = None) -> str:
    """The instructions a task's page shows ("" when none). `leased`: what the lease statement selected with
    the task (`queue.Lease.instructions`: no round trip of its own); without it they are looked up."""
    text = leased
    if text is None:
        text = (
            TaskInstructions.objects.filter(dataset_id=task.dataset_id, kind=task_stage(task))
            .order_by()
            .values_list("text", flat=True)
            .first()
        )
    return text or ""
