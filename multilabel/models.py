"""Algorithm 1's state in the database (ILSVRC §3.3.3): one labeling per (image, hierarchy), the decided answers
behind it and the final leaf labels. The tables keep the names the hierarchy app gave them (the models moved here
by a state-only migration, so no row moved)."""

from __future__ import annotations

from django.db import models


class LabelingOrder(models.TextChoices):
    BREADTH_FIRST = "breadth_first", "Breadth-first (ILSVRC Algorithm 1)"
    CORRELATION = "correlation", "Correlation-aware (co-occurrence of the dataset's finished images)"


class QuestionEngine(models.TextChoices):
    CONSENSUS = "consensus", "Consensus engine (question kind hierarchy, favours yes)"
    VOTE = "vote", "Sequential yes-biased vote (a margin policy, no calibration)"


class LabelingStatus(models.TextChoices):
    RUNNING = "running", "Asking questions"
    DONE = "done", "Every leaf labelled"


class ImageLabeling(models.Model):
    """Where one image stands in Algorithm 1 for one hierarchy. `state` is LabelingState.to_dict() (the asked
    answers in order), so a restarted process resumes by replaying it; `pending_node` is the question
    currently out to the crowd."""

    image = models.ForeignKey("annotation.Image", on_delete=models.PROTECT, related_name="labelings")
    hierarchy = models.ForeignKey("hierarchy.Hierarchy", on_delete=models.PROTECT, related_name="labelings")
    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="labelings")
    order = models.CharField(
        max_length=16, choices=LabelingOrder.choices, default=LabelingOrder.BREADTH_FIRST
    )
    engine = models.CharField(max_length=16, choices=QuestionEngine.choices, default=QuestionEngine.CONSENSUS)
    prediction_set = models.ForeignKey(
        "predictions.PredictionSet",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Its image-level class scores order the questions and, once calibrated, skip unlikely ones.",
    )
    status = models.CharField(max_length=16, choices=LabelingStatus.choices, default=LabelingStatus.RUNNING)
    state = models.JSONField(default=dict)
    pending_node = models.CharField(max_length=32, blank=True)
    questions_asked = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "hierarchy_imagelabeling"  # created by the hierarchy app, before multilabel took it over
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
    node = models.ForeignKey("hierarchy.QuestionNode", on_delete=models.PROTECT, related_name="+")
    present = models.BooleanField()
    yes_votes = models.PositiveIntegerField(default=0)
    no_votes = models.PositiveIntegerField(default=0)
    task = models.ForeignKey(
        "annotation.Task", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "hierarchy_labelinganswer"  # created by the hierarchy app, before multilabel took it over
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["labeling", "node"], name="labeling_answer_once_per_node")
        ]

    def __str__(self) -> str:
        return f"{self.node_id}: {'yes' if self.present else 'no'}"


class LabelingSkip(models.Model):
    """A question answered "no" without asking: the calibrated rule on the prediction set's scores allowed it
    (multilabel/model_scores.py). Kept for the organizer's audit: the node's score, its score bucket's crowd
    counts and upper bound on P(present), the target it is below, and how many decided images calibrated it."""

    labeling = models.ForeignKey(ImageLabeling, on_delete=models.PROTECT, related_name="skips")
    node = models.ForeignKey("hierarchy.QuestionNode", on_delete=models.PROTECT, related_name="+")
    rule = models.CharField(max_length=40)
    score = models.FloatField()
    bound = models.FloatField(help_text="Upper confidence bound on P(present) in the score's bucket.")
    target = models.FloatField(help_text="The miss rate the bound is below.")
    positives = models.PositiveIntegerField()
    observations = models.PositiveIntegerField()
    calibration_images = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["labeling", "node"], name="labeling_skip_once_per_node")
        ]

    def __str__(self) -> str:
        return f"skipped {self.node_id}: score {self.score:.4f}, bound {self.bound:.4f} < {self.target}"


class LabelSource(models.TextChoices):
    ASKED = "asked", "Asked"
    NO_FROM_ANCESTOR = "no_from_ancestor", "No, propagated from an ancestor"
    YES_FROM_DESCENDANT = "yes_from_descendant", "Yes, implied by a descendant"
    SKIPPED = "skipped", "No, inferred from the model's score (skipped, not asked)"
    NO_FROM_SKIPPED = "no_from_skipped", "No, below a skipped question (model-inferred)"


# The labels the crowd decided (asked, or implied by an asked answer): only these calibrate a model's scores.
CROWD_SOURCES = (LabelSource.ASKED, LabelSource.NO_FROM_ANCESTOR, LabelSource.YES_FROM_DESCENDANT)


class LeafLabel(models.Model):
    """The final presence label of one (image, leaf concept) from Algorithm 1, with its provenance."""

    labeling = models.ForeignKey(ImageLabeling, on_delete=models.PROTECT, related_name="leaf_labels")
    image = models.ForeignKey("annotation.Image", on_delete=models.PROTECT, related_name="leaf_labels")
    concept = models.ForeignKey("hierarchy.Concept", on_delete=models.PROTECT, related_name="leaf_labels")
    present = models.BooleanField()
    source = models.CharField(max_length=24, choices=LabelSource.choices)
    via = models.ForeignKey(
        "hierarchy.QuestionNode",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The asked node the label was propagated from.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "hierarchy_leaflabel"  # created by the hierarchy app, before multilabel took it over
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["labeling", "concept"], name="leaf_label_once_per_concept")
        ]
        indexes = [models.Index(fields=["image", "present"], name="leaf_label_present_idx")]

    def __str__(self) -> str:
        return f"image {self.image_id} {self.concept_id}: {'yes' if self.present else 'no'} ({self.source})"
