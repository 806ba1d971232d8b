"""The one wording of a binary question of a (kind, concept), used by every real question and every gold item:
a worker who could tell gold by its wording could answer gold with care and production at random.

Box questions take the box pipeline's wording; image-level questions take the wording of the concept's node in
the newest hierarchy that has it (leaves are image verification questions, inner nodes hierarchy questions),
and a plain default when no hierarchy names the concept.
"""

from __future__ import annotations

from annotation import questions, vote_tasks
from hierarchy.models import Concept, QuestionNode

from .models import QuestionKind


def question_text(kind: str, concept: Concept) -> str:
    if kind in (QuestionKind.BOX_QUALITY, QuestionKind.BOX_COVERAGE):
        return questions.text_for(kind, concept.name)
    node = (
        QuestionNode.objects.filter(concept=concept)
        .order_by("-hierarchy_id")
        .values_list("question", flat=True)
        .first()
    )
    if node:
        return node
    if kind == QuestionKind.HIERARCHY:
        article = "an" if concept.name[:1].lower() in "aeiou" else "a"
        return f"Is there {article} {concept.name} in this image?"
    return vote_tasks.question_text(concept.name)
