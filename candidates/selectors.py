"""Reads of the candidate pool: the images verification takes for a concept, and per-query precision."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count

from annotation.models import Dataset, FinalLabel, Image
from hierarchy.models import Concept

from .models import Candidate


def pool_exists(dataset: Dataset, concept: Concept) -> bool:
    return Candidate.objects.filter(dataset=dataset, concept=concept).exists()


def pool_images(dataset: Dataset, concept: Concept) -> list[Image]:
    """The concept's candidate images to verify: each pool image's kept copy (a near-duplicate is asked
    about once, through the copy its group keeps), each once, in pool order."""
    rows = (
        Candidate.objects.filter(dataset=dataset, concept=concept)
        .order_by("id")
        .values_list("image_id", "image__near_duplicate_of_id")
    )
    seen: dict[int, None] = {}
    for image_id, original in rows:
        seen.setdefault(original or image_id, None)
    # one more hop for links a kept-copy swap left one level deep (groups are kept flat; this is a guard)
    images = Image.objects.in_bulk(list(seen))
    kept: dict[int, None] = {}
    for pk in seen:
        image = images[pk]
        kept.setdefault(image.near_duplicate_of_id or image.pk, None)
    ordered = Image.objects.in_bulk(list(kept))
    return [ordered[pk] for pk in kept]


def query_precision(dataset: Dataset, concept: Concept) -> list[dict]:
    """Per query that found candidates for the concept: how many images it found, how many have a final
    label, and the share of those that show the concept (ImageNet §3.1: which queries bring noise). An image
    is judged by its kept copy's final label. Sorted by query."""
    rows = list(
        Candidate.objects.filter(dataset=dataset, concept=concept).values_list(
            "query", "image_id", "image__near_duplicate_of_id"
        )
    )
    judged_ids = {original or image for _, image, original in rows}
    labels = dict(
        FinalLabel.objects.filter(dataset=dataset, concept=concept, image_id__in=judged_ids).values_list(
            "image_id", "present"
        )
    )
    stats: dict[str, dict[str, int]] = defaultdict(lambda: {"found": 0, "decided": 0, "present": 0})
    for query, image, original in rows:
        entry = stats[query]
        entry["found"] += 1
        verdict = labels.get(original or image)
        if verdict is not None:
            entry["decided"] += 1
            entry["present"] += int(verdict)
    return [
        {
            "query": query,
            **entry,
            "precision": round(entry["present"] / entry["decided"], 4) if entry["decided"] else None,
        }
        for query, entry in sorted(stats.items())
    ]


def pool_summary(dataset: Dataset) -> list[dict]:
    """Per concept with a pool in the dataset (one aggregate query): pool entries, distinct images found,
    distinct queries that found them. By wnid."""
    rows = (
        Candidate.objects.filter(dataset=dataset)
        .values("concept__wnid", "concept__name")
        .annotate(
            entries=Count("id"), images=Count("image", distinct=True), queries=Count("query", distinct=True)
        )
        .order_by("concept__wnid")
    )
    return [
        {
            "wnid": row["concept__wnid"],
            "name": row["concept__name"],
            "entries": row["entries"],
            "images": row["images"],
            "queries": row["queries"],
        }
        for row in rows
    ]
