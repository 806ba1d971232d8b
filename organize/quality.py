"""The dataset's quality figures read from counters and SQL aggregates (a fixed number of queries whatever its
size), shaped by `organize.quality_stats`: calibration tables in use, precision estimated from gold, the
worker-accuracy histogram, votes needed per synset, the hardest synsets and the review load per synset."""

from __future__ import annotations

from django.db.models import Count, Exists, F, Max, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Floor

from annotation.models import Dataset
from consensus.models import (
    CalibrationTable,
    Question,
    QuestionDecision,
    QuestionRole,
    QuestionState,
    QuestionTally,
)
from gold.models import GoldAnswer, GoldItem, GoldSource, ScoreKind, WorkerScore

from . import quality_stats
from .quality_stats import HISTOGRAM_BINS, SynsetReviewLoad, SynsetVotes

DECIDED_YES_NO = (QuestionState.ACCEPTED, QuestionState.REJECTED)


def synset_votes(dataset: Dataset) -> list[SynsetVotes]:
    """Decided production questions per (kind, synset) from the question tally (one row per pair, kept by
    consensus in the transactions that decide questions): no pass over the dataset's questions."""
    rows = (
        QuestionTally.objects.filter(dataset=dataset, production_decided__gt=0)
        .values(
            "kind",
            "concept__wnid",
            "concept__name",
            "production_decided",
            "production_votes",
            "production_review",
        )
        .order_by("kind", "concept__wnid")
    )
    return [
        SynsetVotes(
            kind=r["kind"],
            wnid=r["concept__wnid"],
            name=r["concept__name"],
            questions=r["production_decided"],
            votes=r["production_votes"],
            review=r["production_review"],
        )
        for r in rows
    ]


def _decided_state(with_box: bool) -> Subquery:
    """The state of the decided production question about a gold item's subject (same kind, concept, image,
    and box when the item is about a box)."""
    questions = Question.objects.filter(
        dataset=OuterRef("dataset"),
        kind=OuterRef("kind"),
        concept=OuterRef("concept"),
        image=OuterRef("image"),
        role=QuestionRole.PRODUCTION,
        state__in=DECIDED_YES_NO,
    )
    questions = questions.filter(box=OuterRef("box")) if with_box else questions.filter(box__isnull=True)
    return Subquery(questions.order_by("-id").values("state")[:1])


def gold_precision(dataset: Dataset) -> list[dict]:
    """Precision of consensus measured on gold: for every gold item whose subject consensus decided, did it
    decide like gold? Items promoted from confirmed decisions are left out (they agree by construction)."""
    items = GoldItem.objects.filter(dataset=dataset).exclude(source=GoldSource.PROMOTED)
    rows = []
    for with_box in (False, True):
        # Items whose subject is undecided group under None, dropped here: filtering them out in SQL would run
        # the per-item subquery a second time.
        rows.extend(
            (r["kind"], r["decided"], r["answer"], r["n"])
            for r in items.filter(box__isnull=not with_box)
            .annotate(decided=_decided_state(with_box))
            .values("kind", "decided", "answer")
            .annotate(n=Count("id"))
            .order_by()
            if r["decided"] is not None
        )
    return [quality_stats.precision_row(c) for c in quality_stats.gold_checks(rows)]


def gold_answer_accuracy(dataset: Dataset) -> list[dict]:
    """How often the crowd's answers to gold questions were right, per question kind."""
    rows = (
        GoldAnswer.objects.filter(dataset=dataset)
        .values("kind")
        .annotate(answers=Count("id"), correct=Count("id", filter=Q(correct=True)))
        .order_by("kind")
    )
    out = []
    for r in rows:
        interval = quality_stats.wilson_interval(r["correct"], r["answers"])
        out.append(
            {
                **r,
                "accuracy": r["correct"] / r["answers"],
                "low": interval[0] if interval else None,
                "high": interval[1] if interval else None,
            }
        )
    return out


def worker_accuracy_histogram(dataset: Dataset) -> list[dict]:
    """Workers with gold answers in the dataset by the posterior mean of their accuracy (all gold answers)."""
    bins = (
        WorkerScore.objects.filter(dataset=dataset, kind=ScoreKind.ALL, answered__gt=0)
        .annotate(bin=Floor(F("mean") * HISTOGRAM_BINS))
        .values("bin")
        .annotate(n=Count("id"))
        .order_by()
    )
    return quality_stats.accuracy_histogram({r["bin"]: r["n"] for r in bins})


def calibration_tables(dataset: Dataset) -> list[dict]:
    """The (question kind, synset) pairs of the dataset's questions that have a calibration table, with the
    newest table's id (tables are shared by datasets; `concepts/{wnid}/calibration?kind=` has the cells)."""
    asked = Question.objects.filter(dataset=dataset, kind=OuterRef("kind"), concept=OuterRef("concept"))
    rows = (
        CalibrationTable.objects.filter(Exists(asked))
        .values("kind", "concept__wnid", "concept__name")
        .annotate(newest=Max("id"), versions=Count("id"))
        .order_by("kind", "concept__wnid")
    )
    return [
        {
            "kind": r["kind"],
            "wnid": r["concept__wnid"],
            "name": r["concept__name"],
            "table": r["newest"],
            "versions": r["versions"],
        }
        for r in rows
    ]


def reviewer_decided(dataset: Dataset) -> dict[int, int]:
    """{concept id: production questions a reviewer decided that are not in review again}, from the decision
    rows naming a reviewer (few: review is the exception)."""
    return dict(
        QuestionDecision.objects.filter(
            reviewer__isnull=False, question__dataset=dataset, question__role=QuestionRole.PRODUCTION
        )
        .exclude(question__state=QuestionState.REVIEW)
        .values_list("question__concept")
        .annotate(n=Count("question", distinct=True))
        .order_by()
    )


def synset_review_load(dataset: Dataset) -> list[SynsetReviewLoad]:
    """Per synset, its production questions' images, votes and those waiting in review, in one pass over the
    dataset's production questions (the number of distinct images is in no counter), beside the questions
    reviewers decided."""
    decided = reviewer_decided(dataset)
    rows = (
        Question.objects.filter(dataset=dataset, role=QuestionRole.PRODUCTION)
        .values("concept", "concept__wnid", "concept__name")
        .annotate(
            images=Count("image", distinct=True),
            votes=Sum(F("yes_count") + F("no_count")),
            review_open=Count("id", filter=Q(state=QuestionState.REVIEW)),
        )
        .order_by()
    )
    return quality_stats.review_load(
        SynsetReviewLoad(
            wnid=r["concept__wnid"],
            name=r["concept__name"],
            images=r["images"],
            votes=r["votes"] or 0,
            review_open=r["review_open"],
            review_decided=decided.get(r["concept"], 0),
        )
        for r in rows
    )


def dataset_quality(dataset: Dataset) -> dict:
    synsets = synset_votes(dataset)
    return {
        "dataset": dataset.pk,
        "calibration_tables": calibration_tables(dataset),
        "gold_precision": gold_precision(dataset),
        "gold_answer_accuracy": gold_answer_accuracy(dataset),
        "worker_accuracy": worker_accuracy_histogram(dataset),
        "synsets": [s.as_row() for s in synsets],
        "hardest": [s.as_row() for s in quality_stats.hardest(synsets)],
        "review_load": [s.as_row() for s in synset_review_load(dataset)],
    }
