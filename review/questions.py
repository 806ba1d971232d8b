"""Connects the consensus engine to review: a question the stopping rule sent to review (its vote cap reached,
any kind) becomes an ambiguous item with its image and votes, and the reviewer's accept / reject goes back
through the engine as the question's decision (`consensus.verdicts`), so every pipeline that asked the question
reacts as to any decision (ILSVRC Appendix E)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from annotation.questions import shown_box_ids
from consensus import events as consensus_events
from consensus import verdicts
from consensus.models import Question, QuestionKind, QuestionState, Verdict
from consensus.wording import question_text

from . import resolvers
from .models import Decision

SUBJECT_TYPE = "consensus.question"


def subject_for(question_id: int) -> dict[str, Any]:
    return {"type": SUBJECT_TYPE, "id": question_id}


def question_enqueue(question: Question):
    """Queue a question in review for a reviewer (once while open); returns the item."""
    from .ambiguous import PIPELINE_PRIORITY, ambiguous_enqueue

    votes = f"{question.yes_count} yes / {question.no_count} no"
    return ambiguous_enqueue(
        dataset=question.dataset,
        subject=subject_for(question.pk),
        reason=f"{question.get_kind_display()} undecided at its vote cap ({votes})",
        image=question.image,
        box=question.box if question.kind == QuestionKind.BOX_QUALITY else None,
        priority=PIPELINE_PRIORITY,
    )


def question_sent_to_review(event: consensus_events.QuestionDecided) -> None:
    """A question sent to review is queued; one that left review with a verdict without a reviewer (a blocked
    worker's votes voided, the remaining ones decide it) no longer needs its open item, which is dismissed
    before a reviewer is handed it (a lease holder learns it on deciding: `subject_gone`). A question that was
    not in review has no item (one reopened from review lost it then), so deciding it touches no item: the
    vote path's decisions cost no statement here."""
    if event.decision.decision == Verdict.REVIEW:
        question_enqueue(event.question)
    elif event.decision.reviewer_id is None and event.previous_state == QuestionState.REVIEW:
        _item_dismiss(event.question)


def question_left_review(event: consensus_events.QuestionReopened) -> None:
    """A question reopened out of review (voided votes no longer decide it) collects votes again: its open item
    is dismissed, and going back to review queues a new one."""
    if event.previous_state == QuestionState.REVIEW:
        _item_dismiss(event.question)


def _item_dismiss(question: Question) -> None:
    from .models import ItemState, ReviewItem, ReviewKind

    ReviewItem.objects.filter(
        kind=ReviewKind.AMBIGUOUS,
        state=ItemState.OPEN,
        subject__type=SUBJECT_TYPE,
        subject__id=question.pk,
    ).update(state=ItemState.DISMISSED, updated_at=timezone.now())


# A reviewer's verdict against a clear lean of the crowd (accept where P(yes) <= AGAINST_CROWD, reject where
# P(yes) >= 1 - AGAINST_CROWD) is acted on only once a second decision on the item agrees: the keys 1-5 sit
# side by side, and one slip would overturn a dozen votes without a word. A verdict with the crowd, or a
# second one, is acted on at once.
AGAINST_CROWD = 0.2


def _against_crowd(p: float | None, accept: bool) -> bool:
    return p is not None and (p <= AGAINST_CROWD if accept else p >= 1.0 - AGAINST_CROWD)


def _confirms_held(item, row) -> bool:
    previous = item.decisions.exclude(pk=row.pk).order_by("-id").values_list("decision", "after").first()
    return previous is not None and previous[0] == row.decision and "held" in (previous[1] or {})


def _apply(item, row) -> resolvers.Hold | None:
    from .errors import SubjectGone

    accept = row.decision == Decision.ACCEPT
    p = Question.objects.filter(pk=int(item.subject["id"])).values_list("p", flat=True).first()
    if _against_crowd(p, accept) and not _confirms_held(item, row):
        return resolvers.Hold(
            reason="against_crowd",
            detail={
                "decision": row.decision,
                "p": p,
                "message": f"{row.decision} goes against the crowd (P(yes) = {p:.2f}): decide again to confirm",
            },
        )
    try:
        verdicts.question_review_decide(
            question_id=int(item.subject["id"]), accept=accept, reviewer=row.reviewer
        )
    except verdicts.NotInReview as exc:
        raise SubjectGone(f"{exc} (its votes changed): the item is dismissed, take the next one") from None
    return None


def _describe(item) -> dict[str, Any]:
    question = Question.objects.select_related("concept", "task").filter(pk=item.subject.get("id")).first()
    if question is None:
        return {"kind": "", "question": "", "concept": None, "votes": None, "boxes": []}
    from annotation.models import Box

    text = (question.task.payload or {}).get("question") if question.task else None
    shown = shown_box_ids(question.subject)
    return {
        "kind": question.kind,
        "question": text or question_text(question.kind, question.concept, question.dataset_id),
        "concept": question.concept,
        "votes": {"yes": question.yes_count, "no": question.no_count, "p": question.p},
        "boxes": list(Box.objects.filter(pk__in=shown).select_related("concept").order_by("pk")),
    }


RESOLVER = resolvers.Resolver(
    apply=_apply,
    undo_refused="this verdict was handed to the pipeline that asked the question, which has acted on it; it "
    "cannot be undone",
    decisions=(Decision.ACCEPT, Decision.REJECT),
    describe=_describe,
    owns_box=True,  # the box pipeline accepts or discards a box_quality question's box
)


def questions_in_review_without_item():
    """Questions waiting in review that no open item carries (older data, an enqueue lost): the sweep's work."""
    from .models import OPEN_STATES, ReviewItem, ReviewKind

    open_ids = {
        int(subject["id"])
        for subject in ReviewItem.objects.filter(
            kind=ReviewKind.AMBIGUOUS, state__in=OPEN_STATES, subject__type=SUBJECT_TYPE
        ).values_list("subject", flat=True)
    }
    return Question.objects.filter(state=QuestionState.REVIEW).exclude(pk__in=open_ids).order_by("id")


def connect() -> None:
    consensus_events.subscribe(consensus_events.ANY_KIND, question_sent_to_review)
    consensus_events.subscribe_reopened(consensus_events.ANY_KIND, question_left_review)
    resolvers.register(SUBJECT_TYPE, RESOLVER)
