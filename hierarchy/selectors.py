"""Reads of concepts for the pure query expansion (hierarchy/queries.py): a concept's terms and its ancestors
over the is-a DAG, shared by the `candidate_queries` command and the candidate-queries API."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .models import Concept
from .queries import ConceptTerms, Query, concept_queries


def concept_terms(concept: Concept) -> ConceptTerms:
    return ConceptTerms(
        wnid=concept.wnid, name=concept.name, gloss=concept.gloss, synonyms=tuple(concept.lemmas or ())
    )


def concept_ancestors(concept: Concept) -> list[ConceptTerms]:
    """Every ancestor over the is-a DAG, nearest first (breadth first), each once: one query per level."""
    out: list[ConceptTerms] = []
    seen = {concept.pk}
    level = [concept]
    while level:
        parents = list(Concept.objects.filter(child_edges__child__in=level).distinct().order_by("wnid"))
        level = [p for p in parents if p.pk not in seen]
        seen.update(p.pk for p in level)
        out.extend(concept_terms(p) for p in level)
    return out


def queries_for_concept(
    concept: Concept, translations: Mapping[str, Sequence[str]] | None = None
) -> list[Query]:
    """The concept's search queries: synonyms, parent-gloss words and (given a table) translations."""
    return concept_queries(concept_terms(concept), concept_ancestors(concept), translations)
