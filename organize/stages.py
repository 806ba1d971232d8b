"""The stages of a worker's work as the organizer's pages name them: a consensus question's kind (image_verify,
hierarchy, box_quality, ...) or a task kind (box_draw, ...), the key `annotation.counters.task_stage` gives a
task. Instructions and rewards are set per stage."""

from __future__ import annotations

from annotation import kinds
from consensus.models import QuestionKind

STAGE_TITLES = {
    QuestionKind.IMAGE_VERIFY.value: "Image verification (does this image show the class?)",
    QuestionKind.HIERARCHY.value: "Multi-label questions (is there any ... in this image?)",
    QuestionKind.BOX_QUALITY.value: "Checking a box (is it tight around one whole object?)",
    QuestionKind.BOX_COVERAGE.value: "Checking that every instance is boxed",
    QuestionKind.BINARY_VOTE.value: "Plain yes/no votes",
    "box_draw": "Drawing boxes",
    "hierarchy_question": "Multi-label questions asked as plain votes",
}
# The task kind of calibrated consensus questions: its tasks count under their question kind (their topic).
GENERIC_KINDS = frozenset({"question"})


def work_stages() -> list[dict[str, str]]:
    """Every stage a worker's task can belong to, [{"kind", "title"}], sorted by kind."""
    names = (set(QuestionKind.values) | set(kinds.names())) - GENERIC_KINDS
    return [
        {"kind": name, "title": STAGE_TITLES.get(name) or kinds.get(name).title} for name in sorted(names)
    ]


def stage_names() -> list[str]:
    return [stage["kind"] for stage in work_stages()]
