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


class InvitationRole(models.TextChoices):
    """The roles an organizer may hand out for a dataset (the values are `config.roles` group names)."""

    WORKER = "workers", "Worker"
    REVIEWER = "reviewers", "Reviewer"


class Invitation(models.Model):
    """A one-time link by which a person creates a worker or reviewer account for one dataset.

    Only the SHA-256 of the token is stored: the token itself is shown once, to the organizer who made it.
    Accepting sets `accepted_at` and `accepted_by` once, through a conditional update (single use)."""

    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="invitations")
    role = models.CharField(max_length=16, choices=InvitationRole.choices)
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="invitation",
    )

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["dataset", "role"], name="invitation_dataset_role_idx")]

    def __str__(self) -> str:
        return f"invitation {self.pk} ({self.role}) to dataset {self.dataset_id}"
