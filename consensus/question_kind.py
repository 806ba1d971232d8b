"""The `question` task kind: how the queue serves a consensus question to a worker and hands back the vote.

The worker sees the question's wording, the concept (name and gloss) and the image, and for box questions the
box; never the votes so far, P, the question's role (calibration or production) or anything gold-related.
"""

from __future__ import annotations

from typing import Any

from annotation import binary_vote, kinds
from annotation.models import Assignment, Task

from . import services


def clean_answer(task: Task, answer: Any) -> dict[str, Any]:
    return binary_vote.clean_answer(task, answer)  # the same {"answer": true|false} as a plain vote


def on_submit(assignment: Assignment) -> None:
    services.vote_apply(
        task=assignment.task,
        worker=assignment.worker,
        answer=bool(assignment.answer["answer"]),
        assignment=assignment,
    )


def public_payload(task: Task) -> dict[str, Any]:
    concept = task.concept
    payload: dict[str, Any] = {
        "question": task.payload.get("question", ""),
        "concept": {"wnid": concept.wnid, "name": concept.name, "gloss": concept.gloss} if concept else None,
    }
    box = task.box
    if box is not None:
        payload["box"] = {"x1": box.x1, "y1": box.y1, "x2": box.x2, "y2": box.y2}
    return payload


KIND_SPEC = kinds.register(
    kinds.TaskKind(
        name=services.TASK_KIND,
        title="Yes/no question about an image",
        clean_answer=clean_answer,
        on_submit=on_submit,
        public_payload=public_payload,
    )
)
