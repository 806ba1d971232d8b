"""What the box pipeline stores of its own beside annotation's boxes: each dataset's box settings (how workers
draw), and the four extreme points of a box drawn by extreme clicking (Papadopoulos et al., ICCV 2017)."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q


class DrawMode(models.TextChoices):
    CORNERS = "corners", "Drag a box by its corners"
    EXTREME = "extreme", "Click the top, bottom, left and right-most points (extreme clicking)"


class BoxSettings(models.Model):
    """How a dataset's workers draw boxes. A dataset without a row uses the defaults. The mode is read when a
    DRAW task is queued and kept in its payload, so a task is answered the way its page showed it."""

    dataset = models.OneToOneField(
        "annotation.Dataset", on_delete=models.CASCADE, related_name="box_settings"
    )
    draw_mode = models.CharField(max_length=16, choices=DrawMode.choices, default=DrawMode.CORNERS)
    # Box jobs the dataset starts on its own (multi-label's present classes, `services.on_leaves_present`) begin
    # from this prediction set's proposals scoring at least `proposal_threshold`, asked QUALITY like drawn boxes
    # (docs/boxes.md, "Starting from a model's proposals"); none: they begin with a DRAW.
    prediction_set = models.ForeignKey(
        "predictions.PredictionSet", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    proposal_threshold = models.FloatField(default=0.5)

    class Meta:
        verbose_name_plural = "box settings"

    def __str__(self) -> str:
        return f"box settings of dataset {self.dataset_id}"

    @classmethod
    def for_dataset(cls, dataset_id: int) -> BoxSettings:
        """The dataset's settings, or unsaved defaults when it has none."""
        found = cls.objects.filter(dataset_id=dataset_id).first()
        return found if found is not None else cls(dataset_id=dataset_id)


class BoxExtremePoints(models.Model):
    """The four points a worker clicked for a box by extreme clicking, written in the transaction that stores
    the box; the box is exactly their bounds (`annotation.geometry.validate_extreme_points`). Never edited."""

    box = models.OneToOneField("annotation.Box", on_delete=models.PROTECT, related_name="extreme_points")
    top_x = models.FloatField()
    top_y = models.FloatField()
    bottom_x = models.FloatField()
    bottom_y = models.FloatField()
    left_x = models.FloatField()
    left_y = models.FloatField()
    right_x = models.FloatField()
    right_y = models.FloatField()

    class Meta:
        verbose_name_plural = "box extreme points"
        constraints = [
            # Each point is the extreme one in its direction.
            models.CheckConstraint(
                condition=Q(top_y__lte=F("bottom_y"))
                & Q(top_y__lte=F("left_y"))
                & Q(top_y__lte=F("right_y"))
                & Q(bottom_y__gte=F("left_y"))
                & Q(bottom_y__gte=F("right_y"))
                & Q(left_x__lte=F("right_x"))
                & Q(left_x__lte=F("top_x"))
                & Q(left_x__lte=F("bottom_x"))
                & Q(right_x__gte=F("top_x"))
                & Q(right_x__gte=F("bottom_x")),
                name="box_extreme_points_are_extreme",
            )
        ]

    def __str__(self) -> str:
        return f"extreme points of box {self.box_id}"

    def as_dict(self) -> dict[str, list[float]]:
        return {
            "top": [self.top_x, self.top_y],
            "bottom": [self.bottom_x, self.bottom_y],
            "left": [self.left_x, self.left_y],
            "right": [self.right_x, self.right_y],
        }
