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


class LabelingOrder(models.TextChoices):
    BREADTH_FIRST = "breadth_first", "Breadth-first (ILSVRC Algorithm 1)"
    CORRELATION = "correlation", "Correlation-aware (co-occurrence of the dataset's finished images)"


class QuestionEngine(models.TextChoices):
    CONSENSUS = "consensus", "Consensus engine (question kind hierarchy, favours yes)"
    VOTE = "vote", "Sequential yes-biased vote (hierarchy/voting.py)"


class LabelingStatus(models.TextChoices):
    RUNNING = "running", "Asking questions"
    DONE = "done", "Every leaf labelled"


class ImageLabeling(models.Model):
    """Where one image stands in Algorithm 1 for one hierarchy. `state` is LabelingState.to_dict() (the asked
    answers in order), so a restarted process resumes by replaying it; `pending_node` is the question
    currently out to the crowd."""

    image = models.ForeignKey("annotation.Image", on_delete=models.PROTECT, related_name="labelings")
    hierarchy = models.ForeignKey(Hierarchy, on_delete=models.PROTECT, related_name="labelings")
    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="labelings")
    order = models.CharField(
        max_length=16, choices=LabelingOrder.choices, default=LabelingOrder.BREADTH_FIRST
    )
    engine = models.CharField(max_length=16, choices=QuestionEngine.choices, default=QuestionEngine.CONSENSUS)
    status = models.CharField(max_length=16, choices=LabelingStatus.choices, default=LabelingStatus.RUNNING)
    state = models.JSONField(default=dict)
    pending_node = models.CharField(max_length=32, blank=True)
    questions_asked = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["image", "hierarchy"], name="image_labeling_unique"),
        ]
        indexes = [
            models.Index(fields=["dataset", "hierarchy", "status"], name="image_labeling_progress_idx")
        ]

    def __str__(self) -> str:
        return f"labeling of image {self.image_id} by {self.hierarchy_id} ({self.status})"


class LabelingAnswer(models.Model):
    """A decided answer to one asked question of one image, with the votes behind it. Append-only."""

    labeling = models.ForeignKey(ImageLabeling, on_delete=models.PROTECT, related_name="answers")
    node = models.ForeignKey(QuestionNode, on_delete=models.PROTECT, related_name="+")
    present = models.BooleanField()
    yes_votes = models.PositiveIntegerField(default=0)
    no_votes = models.PositiveIntegerField(default=0)
    task = models.ForeignKey(
        "annotation.Task", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["labeling", "node"], name="labeling_answer_once_per_node")
        ]

    def __str__(self) -> str:
        return f"{self.node_id}: {'yes' if self.present else 'no'}"


class LabelSource(models.TextChoices):
    ASKED = "asked", "Asked"
    NO_FROM_ANCESTOR = "no_from_ancestor", "No, propagated from an ancestor"
    YES_FROM_DESCENDANT = "yes_from_descendant", "Yes, implied by a descendant"


class LeafLabel(models.Model):
    """The final presence label of one (image, leaf concept) from Algorithm 1, with its provenance."""

    labeling = models.ForeignKey(ImageLabeling, on_delete=models.PROTECT, related_name="leaf_labels")
    image = models.ForeignKey("annotation.Image", on_delete=models.PROTECT, related_name="leaf_labels")
    concept = models.ForeignKey(Concept, on_delete=models.PROTECT, related_name="leaf_labels")
    present = models.BooleanField()
    source = models.CharField(max_length=24, choices=LabelSource.choices)
    via = models.ForeignKey(
        QuestionNode,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The asked node the label was propagated from.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["labeling", "concept"], name="leaf_label_once_per_concept")
        ]
        indexes = [models.Index(fields=["image", "present"], name="leaf_label_present_idx")]

    def __str__(self) -> str:
        return f"image {self.image_id} {self.concept_id}: {'yes' if self.present else 'no'} ({self.source})"
