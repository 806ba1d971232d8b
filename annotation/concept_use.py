"""Which datasets use a concept (picked it as a class, or hold tasks about it): what a hierarchy loader must not
silently rewrite (hierarchy.services.concepts_in_use asks this through its registry)."""

from __future__ import annotations

from collections import defaultdict

from .models import Dataset, Task


def concept_users(wnids: list[str]) -> dict[str, dict[int, str]]:
    """wnid -> {id: name} of the datasets using it."""
    users: dict[str, dict[int, str]] = defaultdict(dict)
    picked = Dataset.concepts.through.objects.filter(concept__wnid__in=wnids)
    for wnid, pk, name in picked.values_list("concept__wnid", "dataset_id", "dataset__name"):
        users[wnid][pk] = name
    tasked = (
        Task.objects.filter(concept__wnid__in=wnids)
        .values_list("concept__wnid", "dataset_id", "dataset__name")
        .distinct()
    )
    for wnid, pk, name in tasked:
        users[wnid][pk] = name
    return users
