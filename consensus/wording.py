"""The one wording of a binary question of a (kind, concept), used by every real question and every gold item:
a worker who could tell gold by its wording could answer gold with care and production at random.

Box questions take the box pipeline's wording; image-level questions take the wording of the concept's node in
the newest hierarchy the question's dataset labels with (leaves are image verification questions, inner nodes
hierarchy questions), and a plain default built from the concept's name otherwise. Another organizer's hierarchy
never words a dataset's questions: uploading one changes nothing under other tenants. The multilabel app, which
knows which hierarchies a dataset labels with, registers that source here (`register_wording_source`).
"""

from __future__ import annotations

from collections.abc import Callable

from annotation import questions, vote_tasks
from hierarchy.models import Concept

from .models import QuestionKind

# (dataset id, concept id) -> the wording of that concept's question in the dataset's own hierarchies, or None.
WordingSource = Callable[[int, int], str | None]
_sources: list[WordingSource] = []


def register_wording_source(fn: WordingSource) -> WordingSource:
    """Registering the same callable twice is a no-op (`ready()` may run twice)."""
    if fn not in _sources:
        _sources.append(fn)
    return fn


def question_text(kind: str, concept: Concept, dataset_id: int) -> str:
    if kind in (QuestionKind.BOX_QUALITY, QuestionKind.BOX_COVERAGE):
        return questions.text_for(kind, concept.name)
    for source in _sources:
        text = source(dataset_id, concept.pk)
        if text:
            return text
    if kind == QuestionKind.HIERARCHY:
        article = "an" if concept.name[:1].lower() in "aeiou" else "a"
        return f"Is there {article} {concept.name} in this image?"
    return vote_tasks.question_text(concept.name)
