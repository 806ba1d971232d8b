"""Concepts (WordNet-style synsets) and the is-a DAG between them."""

from __future__ import annotations

from django.db import models


class Concept(models.Model):
    """A synset: the unit every label, question and box refers to."""

    wnid = models.CharField(
        max_length=32, unique=True, help_text="WordNet id such as n02084071, or a local id."
    )
    name = models.CharField(max_length=200)
    gloss = models.TextField(blank=True)
    parents = models.ManyToManyField(
        "self", through="ConceptEdge", symmetrical=False, related_name="children", blank=True
    )

    class Meta:
        ordering = ["wnid"]

    def __str__(self) -> str:
        return f"{self.name} ({self.wnid})"


class ConceptEdge(models.Model):
    """One is-a edge: `child` is a kind of `parent`. A concept may have several parents."""

    parent = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="child_edges")
    child = models.ForeignKey(Concept, on_delete=models.CASCADE, related_name="parent_edges")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["parent", "child"], name="concept_edge_unique"),
            models.CheckConstraint(
                condition=~models.Q(parent=models.F("child")), name="concept_edge_no_self_loop"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.child_id} is-a {self.parent_id}"
