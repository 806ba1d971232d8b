"""What the organizer workspace stores of its own: the prices its cost ledger uses."""

from __future__ import annotations

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
