"""Worker identities: who answers micro-tasks, wherever they come from."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class WorkerSource(models.TextChoices):
    INHOUSE = "inhouse", "In-house"
    MTURK = "mturk", "Mechanical Turk"
    EXTERNAL = "external", "External link"
    SIMULATED = "simulated", "Simulated"


class Worker(models.Model):
    """A crowd worker. Every worker has a Django user (external workers get one with an unusable password),
    so the API authenticates everyone the same way; `external_id` holds e.g. the MTurk WorkerId."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="worker")
    source = models.CharField(max_length=16, choices=WorkerSource.choices, default=WorkerSource.INHOUSE)
    external_id = models.CharField(max_length=128, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["source", "external_id"],
                condition=~models.Q(external_id=""),
                name="worker_unique_external_id",
            )
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.external_id or self.user_id}"
