"""Per-stage progress of a dataset for the organizer's dashboard: counts from SQL aggregates and the dataset's
box tally (a fixed number of queries whatever the dataset's size) and an ETA from the rate of the last minutes.
The work of excluded images is left out of every stage (organize/image_exclusion.py)."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import Box, BoxJob, BoxJobStatus, BoxState, Dataset, DatasetTally
from consensus.models import DECIDED_STATES, Question, QuestionKind, QuestionTally
from multilabel.models import ImageLabeling, LabelingStatus
from review.models import OPEN_STATES, ReviewItem

from .eta import eta_from_rate

RATE_WINDOW = timedelta(minutes=15)


def _stage(key: str, label: str, done: int, total: int, recent: int, extra: dict | None = None) -> dict:
    eta = eta_from_rate(total - done, recent, RATE_WINDOW.total_seconds())
    return {
        "key": key,
        "label": label,
        "done": done,
        "total": total,
        "eta_seconds": None if eta.seconds is None else round(eta.seconds),
        "rate_per_hour": round(eta.rate_per_hour, 1),
        **(extra or {}),
    }


def dataset_progress(dataset: Dataset, now=None) -> dict:
    since = (now or timezone.now()) - RATE_WINDOW

    # Questions asked and decided from the dataset's question tally (kept in the transactions that create
    # and decide them); only the recent window is counted, by the (dataset, kind, decided_at) index.
    def per_dataset(rows, total):
        return Coalesce(Subquery(rows.order_by().values("dataset").annotate(n=total).values("n")), 0)

    verify_tally = QuestionTally.objects.filter(dataset=OuterRef("pk"), kind=QuestionKind.IMAGE_VERIFY)
    # Questions about excluded images (organize/image_exclusion.py) are left out of the stage, decided or not:
    # counted by the image's exclusion (few rows), subtracted from the tally in the same statement.
    excluded_verify = Question.objects.filter(
        dataset=OuterRef("pk"), kind=QuestionKind.IMAGE_VERIFY, image__excluded_at__isnull=False
    )
    verify = (
        Dataset.objects.filter(pk=dataset.pk)
        .annotate(
            total=per_dataset(verify_tally, Sum("questions")) - per_dataset(excluded_verify, Count("id")),
            done=per_dataset(verify_tally, Sum("decided"))
            - per_dataset(excluded_verify.filter(state__in=DECIDED_STATES), Count("id")),
            recent=per_dataset(
                Question.objects.filter(
                    dataset=OuterRef("pk"),
                    kind=QuestionKind.IMAGE_VERIFY,
                    state__in=DECIDED_STATES,
                    decided_at__gte=since,
                ),
                Count("id"),
            ),
        )
        .values("total", "done", "recent")
        .get()
    )
    labelings = ImageLabeling.objects.filter(dataset=dataset, image__excluded_at__isnull=True).aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status=LabelingStatus.DONE)),
        recent=Count("id", filter=Q(status=LabelingStatus.DONE, finished_at__gte=since)),
    )
    jobs = BoxJob.objects.filter(dataset=dataset, image__excluded_at__isnull=True).aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status=BoxJobStatus.DONE)),
        review=Count("id", filter=Q(status=BoxJobStatus.REVIEW)),
        recent=Count(
            "id", filter=Q(status__in=[BoxJobStatus.DONE, BoxJobStatus.REVIEW], updated_at__gte=since)
        ),
    )
    # Image and box counts from the dataset's tally (kept in the transactions that store images and write
    # boxes), not from counting a million boxes through their images; only the recent window is counted, by
    # the boxes' creation index. No tally row: nothing was ever stored in the dataset.
    recent_boxes = (
        Box.objects.filter(created_at__gte=since, state=BoxState.ACCEPTED, image__dataset=OuterRef("dataset"))
        .order_by()
        .values("state")
        .annotate(n=Count("id"))
        .values("n")
    )
    tally = DatasetTally.objects.filter(dataset=dataset).annotate(recent=Coalesce(Subquery(recent_boxes), 0))
    boxes = next(
        iter(tally.values("images", "boxes_drawn", "boxes_accepted", "recent")),
        {"images": 0, "boxes_drawn": 0, "boxes_accepted": 0, "recent": 0},
    )
    images = boxes["images"]
    boxes = {"drawn": boxes["boxes_drawn"], "verified": boxes["boxes_accepted"], "recent": boxes["recent"]}
    review = ReviewItem.objects.filter(dataset=dataset, image__excluded_at__isnull=True).aggregate(
        total=Count("id"), open=Count("id", filter=Q(state__in=OPEN_STATES))
    )
    stages = [
        _stage("verification", "Candidates verified", verify["done"], verify["total"], verify["recent"]),
        _stage(
            "multilabel", "Images multi-labelled", labelings["done"], labelings["total"], labelings["recent"]
        ),
        _stage("boxes_verified", "Boxes verified", boxes["verified"], boxes["drawn"], boxes["recent"]),
        _stage(
            "boxes_covered",
            "Box jobs covered",
            jobs["done"] + jobs["review"],
            jobs["total"],
            jobs["recent"],
            {"in_review": jobs["review"]},
        ),
        _stage("review", "Review items decided", review["total"] - review["open"], review["total"], 0),
    ]
    return {
        "dataset": dataset.pk,
        "images": images,
        "boxes_drawn": boxes["drawn"],
        "box_jobs_in_review": jobs["review"],
        "review_open": review["open"],
        "window_seconds": int(RATE_WINDOW.total_seconds()),
        "stages": stages,
    }
