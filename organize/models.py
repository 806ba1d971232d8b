"""What the organizer workspace stores of its own: the prices its cost ledger uses, and the organizers' verdicts
on near-duplicate flags."""

from __future__ import annotations

from django.conf import settings
from django.db import models

DEFAULT_REWARDS = {"box_draw": 0.05}  # drawing a box is work; a yes/no answer costs the default reward


class CostSettings(models.Model):
    """The dataset's reward per answer by stage (question or task kind), and the crowd provider's fee."""

    dataset = models.OneToOneField(
        "annotation.Dataset", on_delete=models.CASCADE, related_name="cost_settings"
    )
    currency = models.CharField(max_length=3, default="USD")
    default_reward = models.DecimalField(max_digits=8, decimal_places=4, default=0.01)
    rewards = models.JSONField(default=dict, blank=True, help_text="{stage: reward per answer}")
    fee_fraction = models.FloatField(
        default=0.2, help_text="The provider's fee on top of rewards (0.2 = 20%)."
    )

    def __str__(self) -> str:
        return f"cost settings of dataset {self.dataset_id}"

    @classmethod
    def for_dataset(cls, dataset_id: int) -> CostSettings:
        found = cls.objects.filter(dataset_id=dataset_id).first()
        return found or cls(dataset_id=dataset_id, rewards=dict(DEFAULT_REWARDS))


class NearDuplicateDecision(models.TextChoices):
    CONFIRM = "confirm", "A near-duplicate: keep it with its original"
    DISMISS = "dismiss", "Not a near-duplicate: a distinct image"


class NearDuplicateReview(models.Model):
    """An organizer's verdict on an image flagged at ingestion as a near-duplicate of `original`. Append-only;
    a dismissal also clears the image's flag (in the same transaction), so splits stop keeping the two
    together."""

    image = models.ForeignKey("annotation.Image", on_delete=models.PROTECT, related_name="+")
    original = models.ForeignKey("annotation.Image", on_delete=models.PROTECT, related_name="+")
    decision = models.CharField(max_length=8, choices=NearDuplicateDecision.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["image", "original"], name="near_duplicate_review_once")
        ]

    def __str__(self) -> str:
        return f"image {self.image_id} / {self.original_id}: {self.decision}"
