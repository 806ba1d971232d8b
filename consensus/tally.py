"""The per-(dataset, kind, concept) counts of questions asked and decided, and of the decided production
questions their number, votes and those in review (`QuestionTally`), changed only here, inside the
transactions that create questions, decide or reopen them and recount their votes, with adding UPDATEs
(annotation.counters explains why that is exact under concurrency)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

from django.db.models import Count, F, Q, Sum

from annotation.counters import counter_add, counter_rows_rewrite

from .models import DECIDED_STATES, Question, QuestionRole, QuestionState, QuestionTally

FIELDS = ("questions", "decided", "production_decided", "production_votes", "production_review")


class Seen(NamedTuple):
    """What one question adds to its tally row: decided or not, and, for a decided production question, one
    decided question, its votes and whether it waits in review."""

    decided: int
    production_decided: int
    production_votes: int
    production_review: int


def seen(question: Question) -> Seen:
    """The question's share of its tally row as it is now (take it before changing state or vote counts)."""
    decided = question.state in DECIDED_STATES
    if not decided or question.role != QuestionRole.PRODUCTION:
        return Seen(int(decided), 0, 0, 0)
    return Seen(1, 1, question.yes_count + question.no_count, int(question.state == QuestionState.REVIEW))


def _key(question: Question) -> dict:
    return {"dataset_id": question.dataset_id, "kind": question.kind, "concept_id": question.concept_id}


def questions_counted(questions: Iterable[Question]) -> None:
    """New questions (decided already or not), one update per key, in a fixed order."""
    groups: dict[tuple, Counter] = {}
    for q in questions:
        cell = groups.setdefault((q.dataset_id, q.kind, q.concept_id), Counter())
        cell["questions"] += 1
        cell.update(seen(q)._asdict())
    for key in sorted(groups):
        dataset_id, kind, concept_id = key
        counter_add(
            QuestionTally,
            {"dataset_id": dataset_id, "kind": kind, "concept_id": concept_id},
            dict(groups[key]),
        )


def question_changed(question: Question, before: Seen) -> None:
    """The question's state or vote counts changed (it was decided, reopened, decided again by a reviewer, or
    its votes were recounted); `before` is `seen(question)` from before the change. One update of its row,
    none when its share did not change."""
    after = seen(question)
    counter_add(
        QuestionTally, _key(question), {name: after[i] - before[i] for i, name in enumerate(Seen._fields)}
    )


def tally_expected(dataset_id: int) -> dict[tuple[str, int], dict[str, int]]:
    """{(kind, concept id): {questions, decided, production_decided, production_votes, production_review}}
    recomputed from the dataset's questions."""
    settled = Q(state__in=DECIDED_STATES, role=QuestionRole.PRODUCTION)
    return {
        (r["kind"], r["concept_id"]): {name: r[name] or 0 for name in FIELDS}
        for r in Question.objects.filter(dataset_id=dataset_id)
        .values("kind", "concept_id")
        .annotate(
            questions=Count("id"),
            decided=Count("id", filter=Q(state__in=DECIDED_STATES)),
            production_decided=Count("id", filter=settled),
            production_votes=Sum(F("yes_count") + F("no_count"), filter=settled),
            production_review=Count("id", filter=settled & Q(state=QuestionState.REVIEW)),
        )
        .order_by()
    }


def tally_stored(dataset_id: int) -> dict[tuple[str, int], dict[str, int]]:
    return {
        (r["kind"], r["concept_id"]): {name: r[name] for name in FIELDS}
        for r in QuestionTally.objects.filter(dataset_id=dataset_id).values("kind", "concept_id", *FIELDS)
        if any(r[name] for name in FIELDS)
    }


def tally_recount(dataset_id: int) -> int:
    """Rewrite the dataset's question tally from its questions (rows locked first, as in
    annotation.counters.counters_recount); returns how many rows changed. Call inside a transaction."""
    list(QuestionTally.objects.select_for_update(no_key=True).filter(dataset_id=dataset_id).order_by("id"))
    return counter_rows_rewrite(
        QuestionTally,
        dataset_id,
        ("kind", "concept_id"),
        tally_expected(dataset_id),
        tally_stored(dataset_id),
        zero=dict.fromkeys(FIELDS, 0),
    )
