"""Plain vote tasks: "does this image show CONCEPT?" asked of several workers, queued per image: their task kind
and wording. The consensus engine, a layer above, asks them (`consensus.binary_vote.vote_tasks_create`): each
becomes a consensus question with a fixed majority of `answers_wanted` votes as its rule, served as a
`binary_vote` task; the apps below it read their tasks by this kind.
"""

from __future__ import annotations

KIND = "binary_vote"


def question_text(concept_name: str) -> str:
    article = "an" if concept_name[:1].lower() in "aeiou" else "a"
    return f"Does this image show {article} {concept_name}?"
