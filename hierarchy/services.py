"""Writes to the concept DAG."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.db import transaction

from .models import Concept, ConceptEdge


def concepts_upsert(nodes: Iterable[Mapping]) -> dict[str, Concept]:
    """Create or update concepts and their is-a edges from validated node mappings with keys `wnid`, `name`,
    `gloss` and `parents` (a list of wnids present in the same batch or already stored). One transaction."""
    nodes = list(nodes)
    with transaction.atomic():
        by_wnid: dict[str, Concept] = {}
        for node in nodes:
            concept, _ = Concept.objects.update_or_create(
                wnid=node["wnid"], defaults={"name": node["name"], "gloss": node.get("gloss", "")}
            )
            by_wnid[concept.wnid] = concept
        wanted_parents = {p for node in nodes for p in node.get("parents", ())} - set(by_wnid)
        by_wnid.update({c.wnid: c for c in Concept.objects.filter(wnid__in=wanted_parents)})
        missing = sorted(wanted_parents - set(by_wnid))
        if missing:
            raise ValueError(f"unknown parent concepts: {', '.join(missing)}")
        edges = [
            ConceptEdge(parent=by_wnid[parent], child=by_wnid[node["wnid"]])
            for node in nodes
            for parent in node.get("parents", ())
        ]
        ConceptEdge.objects.bulk_create(edges, ignore_conflicts=True)
        return by_wnid
