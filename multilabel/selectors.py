"""Reads: a dataset's multi-label progress and each image's present classes (for organizers), and how its own
hierarchies word a concept's question (for consensus.wording)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, F, Prefetch, Q, QuerySet, Sum

from hierarchy.models import QuestionNode

from .models import ImageLabeling, LabelingAnswer, LabelingSkip, LabelingStatus, LeafLabel


def dataset_wording(dataset_id: int, concept_id: int) -> str | None:
    """The concept's question in the newest hierarchy the dataset labels with (registered with
    consensus.wording): only the dataset's own hierarchies word its questions, never one another organizer
    uploaded later."""
    used = ImageLabeling.objects.filter(dataset_id=dataset_id).values("hierarchy_id")
    return (
        QuestionNode.objects.filter(concept_id=concept_id, hierarchy_id__in=used)
        .order_by("-hierarchy_id")
        .values_list("question", flat=True)
        .first()
    )


def labelings_of(dataset_id: int, hierarchy_id: int | None = None) -> QuerySet[ImageLabeling]:
    """The dataset's image labelings with their vote totals, present leaf labels and skips prefetched."""
    qs = ImageLabeling.objects.filter(dataset_id=dataset_id)
    if hierarchy_id is not None:
        qs = qs.filter(hierarchy_id=hierarchy_id)
    return (
        qs.annotate(votes=Sum(F("answers__yes_votes") + F("answers__no_votes")))
        .prefetch_related(
            Prefetch(
                "leaf_labels",
                queryset=LeafLabel.objects.filter(present=True)
                .select_related("concept")
                .order_by("concept__wnid"),
                to_attr="present_labels",
            ),
            Prefetch("skips", queryset=LabelingSkip.objects.select_related("node").order_by("id")),
        )
        .order_by("id")
    )


def multilabel_progress(dataset_id: int, hierarchy_id: int | None = None) -> dict[str, Any]:
    qs = ImageLabeling.objects.filter(dataset_id=dataset_id)
    if hierarchy_id is not None:
        qs = qs.filter(hierarchy_id=hierarchy_id)
    counts = qs.aggregate(
        images=Count("id"),
        done=Count("id", filter=Q(status=LabelingStatus.DONE)),
        questions=Sum("questions_asked"),
    )
    answers = LabelingAnswer.objects.filter(labeling__in=qs).aggregate(y=Sum("yes_votes"), n=Sum("no_votes"))
    present = LeafLabel.objects.filter(labeling__in=qs, present=True).count()
    return {
        "images": counts["images"],
        "done": counts["done"],
        "running": counts["images"] - counts["done"],
        "questions_decided": counts["questions"] or 0,
        "votes": (answers["y"] or 0) + (answers["n"] or 0),
        "present_labels": present,
    }
