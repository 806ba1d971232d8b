"""The per-(dataset, kind, concept) counts of questions asked and decided (`QuestionTally`), changed only here,
inside the transactions that create questions and change whether they are decided, with F() updates
(annotation.counters explains why that is exact under concurrency)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from django.db.models import Count, Q

from annotation.counters import counter_add

from .models import DECIDED_STATES, Question, QuestionTally


def _key(question: Question) -> dict:
    return {"dataset_id": question.dataset_id, "kind": question.kind, "concept_id": question.concept_id}


def questions_counted(questions: Iterable[Question]) -> None:
    """New questions (decided already or not), one update per key, in a fixed order."""
    groups: Counter = Counter()
    decided: Counter = Counter()
    for q in questions:
        key = (q.dataset_id, q.kind, q.concept_id)
        groups[key] += 1
        decided[key] += q.state in DECIDED_STATES
    for key in sorted(groups):
        dataset_id, kind, concept_id = key
        counter_add(
            QuestionTally,
            {"dataset_id": dataset_id, "kind": kind, "concept_id": concept_id},
            {"questions": groups[key], "decided": decided[key]},
        )


def decided_changed(question: Question, was_decided: bool) -> None:
    """The question's state changed; count it if it went from undecided to decided or back."""
    now_decided = question.state in DECIDED_STATES
    if now_decided != was_decided:
        counter_add(QuestionTally, _key(question), {"decided": 1 if now_decided else -1})


def tally_expected(dataset_id: int) -> dict[tuple[str, int], dict[str, int]]:
    """{(kind, concept id): {questions, decided}} recomputed from the dataset's questions."""
    return {
        (r["kind"], r["concept_id"]): {"questions": r["n"], "decided": r["decided"]}
        for r in Question.objects.filter(dataset_id=dataset_id)
        .values("kind", "concept_id")
        .annotate(n=Count("id"), decided=Count("id", filter=Q(state__in=DECIDED_STATES)))
        .order_by()
    }


def tally_stored(dataset_id: int) -> dict[tuple[str, int], dict[str, int]]:
    return {
        (r["kind"], r["concept_id"]): {"questions": r["questions"], "decided": r["decided"]}
        for r in QuestionTally.objects.filter(dataset_id=dataset_id).values(
            "kind", "concept_id", "questions", "decided"
        )
        if r["questions"] or r["decided"]
    }


def tally_recount(dataset_id: int) -> int:
    """Rewrite the dataset's question tally from its questions (rows locked first, as in
    annotation.counters.counters_recount); returns how many rows changed. Call inside a transaction."""
    list(QuestionTally.objects.select_for_update().filter(dataset_id=dataset_id).order_by("id"))
    expected, stored = tally_expected(dataset_id), tally_stored(dataset_id)
    changed = 0
    for key in sorted(set(expected) | set(stored)):
        want = expected.get(key, {"questions": 0, "decided": 0})
        if stored.get(key) != want:
            QuestionTally.objects.update_or_create(
                dataset_id=dataset_id, kind=key[0], concept_id=key[1], defaults=want
            )
            changed += 1
    return changed
