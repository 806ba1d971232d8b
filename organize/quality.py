"""The dataset's quality figures read from counters and SQL aggregates (a fixed number of queries whatever its
size), shaped by `organize.quality_stats`: calibration tables in use, precision estimated from gold, the
worker-accuracy histogram, votes needed per synset, the hardest synsets and the review load per synset."""

from __future__ import annotations

from django.db.models import Count, Exists, F, Max, OuterRef, Q, Subquery
from django.db.models.functions import Floor

from annotation.models import BoxJob, Dataset
from consensus.models import (
    CalibrationTable,
    Question,
    QuestionDecision,
    QuestionKind,
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


# The kinds whose questions are about a whole image, one question per image and synset (box questions are about
# a box, or ask coverage round after round).
IMAGE_KINDS = (QuestionKind.IMAGE_VERIFY, QuestionKind.HIERARCHY, QuestionKind.BINARY_VOTE)


def reviewer_decided(dataset: Dataset) -> dict[str, int]:
    """{wnid: production questions a reviewer decided that are not back in review}, from the decision rows
    naming a reviewer (few: review is the exception)."""
    return dict(
        QuestionDecision.objects.filter(
            reviewer__isnull=False, question__dataset=dataset, question__role=QuestionRole.PRODUCTION
        )
        .exclude(question__state=QuestionState.REVIEW)
        .values_list("question__concept__wnid")
        .annotate(n=Count("question", distinct=True))
        .order_by()
    )


def box_jobs(dataset: Dataset, wnids: set[str]) -> dict[str, int]:
    """{wnid: box jobs} of those synsets (one job per image and synset), through the (dataset, concept) index."""
    if not wnids:
        return {}
    return dict(
        BoxJob.objects.filter(dataset=dataset, concept__wnid__in=sorted(wnids))
        .values_list("concept__wnid")
        .annotate(n=Count("id"))
        .order_by()
    )


def synset_review_load(dataset: Dataset, synsets: list[SynsetVotes]) -> list[SynsetReviewLoad]:
    """Reviewer items per 100 images per synset: the question tally's rows (`synsets`) with the reviewers'
    decisions and, for synsets only boxed, their box jobs (two small aggregates at most); no pass over the
    dataset's questions."""
    image_kinds = {str(k) for k in IMAGE_KINDS}
    return quality_stats.review_load(
        synsets,
        image_kinds=image_kinds,
        reviewer_decided=reviewer_decided(dataset),
        box_jobs=box_jobs(dataset, quality_stats.boxed_only(synsets, image_kinds)),
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
        "review_load": [s.as_row() for s in synset_review_load(dataset, synsets)],
    }
