"""Concepts (WordNet-style synsets), the is-a DAG between them, and loaded question hierarchies with their
nodes. The labeling of images by these questions lives in `multilabel.models`."""

from __future__ import annotations

from django.db import models


class Concept(models.Model):
    """A synset: the unit every label, question and box refers to."""

    wnid = models.CharField(
        max_length=32, unique=True, help_text="WordNet id such as n02084071, or a local id."
    )
    name = models.CharField(max_length=200)
    gloss = models.TextField(blank=True)
    lemmas = models.JSONField(
        default=list,
        blank=True,
        help_text="More lemmas (synonyms) of the synset than its name lists; query expansion uses every one.",
    )
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


class Hierarchy(models.Model):
    """A loaded question tree (ILSVRC §3.3.3, Appendix D): a fixture's name and version, and the fingerprint of
    its DAG, which labeling states record so a state is never resumed against another tree."""

    name = models.CharField(max_length=200)
    version = models.CharField(max_length=50)
    description = models.TextField(blank=True)
    fingerprint = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="hierarchy_unique_name_version")
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.version}"


class QuestionNode(models.Model):
    """One yes/no question of a hierarchy. Leaves are concepts being labelled; internal nodes group them and
    link a concept only when they are one synset (otherwise a local concept with their question id, so every
    question has a subject the consensus engine can calibrate)."""

    hierarchy = models.ForeignKey(Hierarchy, on_delete=models.CASCADE, related_name="nodes")
    node_id = models.CharField(max_length=32, help_text="The fixture id: a wnid, or q:slug for a question.")
    name = models.CharField(max_length=200)
    question = models.TextField(help_text="The worker-facing wording.")
    gloss = models.TextField(blank=True)
    leaf = models.BooleanField(default=False)
    position = models.PositiveIntegerField(
        help_text="Order in the fixture (leaves: the official class order)."
    )
    concept = models.ForeignKey(
        Concept, null=True, blank=True, on_delete=models.PROTECT, related_name="question_nodes"
    )
    parents = models.ManyToManyField("self", symmetrical=False, related_name="children", blank=True)

    class Meta:
        ordering = ["hierarchy_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["hierarchy", "node_id"], name="question_node_unique_id"),
            models.CheckConstraint(
                condition=~models.Q(leaf=True, concept__isnull=True), name="question_node_leaf_has_concept"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.node_id}: {self.question}"
