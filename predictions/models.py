"""A model's predictions for a dataset: one prediction set per imported file or push, its box proposals and its
image-level class scores (docs/predictions.md). Proposals, never labels: the box pipeline and Algorithm 1 read them
to order and seed questions, and the crowd decides."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class PredictionSource(models.TextChoices):
    UPLOAD = "upload", "Uploaded file"
    COMMAND = "command", "import_predictions command"
    MODEL = "model", "Pushed by a model server"


class PredictionSet(models.Model):
    """One model output, stored whole or not at all; the same content again answers this set (`sha256`)."""

    dataset = models.ForeignKey(
        "annotation.Dataset", on_delete=models.CASCADE, related_name="prediction_sets"
    )
    name = models.CharField(max_length=200)
    model_name = models.CharField(max_length=200, blank=True)
    model_version = models.CharField(max_length=100, blank=True)
    source = models.CharField(max_length=16, choices=PredictionSource.choices)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    sha256 = models.CharField(max_length=64, help_text="Of the file's bytes (a push: of its canonical JSON).")
    box_count = models.PositiveIntegerField(default=0)
    score_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "sha256"], name="prediction_set_unique_content")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.dataset_id})"


class BoxPrediction(models.Model):
    """A proposed box in original-image pixels, the convention of annotation.Box (0 <= x1 < x2 <= width)."""

    prediction_set = models.ForeignKey(PredictionSet, on_delete=models.CASCADE, related_name="boxes")
    image = models.ForeignKey("annotation.Image", on_delete=models.PROTECT, related_name="+")
    concept = models.ForeignKey("hierarchy.Concept", on_delete=models.PROTECT, related_name="+")
    x1 = models.FloatField()
    y1 = models.FloatField()
    x2 = models.FloatField()
    y2 = models.FloatField()
    score = models.FloatField()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(x2__gt=F("x1")) & Q(y2__gt=F("y1")), name="box_prediction_positive_area"
            ),
            models.CheckConstraint(condition=Q(x1__gte=0) & Q(y1__gte=0), name="box_prediction_non_negative"),
            models.CheckConstraint(
                condition=Q(score__gte=0) & Q(score__lte=1), name="box_prediction_score_0_1"
            ),
        ]
        # The box pipeline will read a set's proposals image by image and class by class.
        indexes = [models.Index(fields=["prediction_set", "image", "concept"], name="box_prediction_lookup")]

    def __str__(self) -> str:
        return (
            f"proposal {self.pk} [{self.x1:.0f},{self.y1:.0f},{self.x2:.0f},{self.y2:.0f}] {self.score:.2f}"
        )


class ClassScore(models.Model):
    """A model's confidence in [0, 1] that the image shows the class (one per set, image and class)."""

    prediction_set = models.ForeignKey(PredictionSet, on_delete=models.CASCADE, related_name="scores")
    image = models.ForeignKey("annotation.Image", on_delete=models.PROTECT, related_name="+")
    concept = models.ForeignKey("hierarchy.Concept", on_delete=models.PROTECT, related_name="+")
    score = models.FloatField()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["prediction_set", "image", "concept"], name="class_score_one_per_image_class"
            ),
            models.CheckConstraint(condition=Q(score__gte=0) & Q(score__lte=1), name="class_score_0_1"),
        ]

    def __str__(self) -> str:
        return f"score {self.score:.2f} of concept {self.concept_id} on image {self.image_id}"
