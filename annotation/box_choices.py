"""A box's state and provenance (`annotation.models.Box`), apart so the models module stays readable."""

from django.db import models


class BoxState(models.TextChoices):
    PENDING = "pending", "Awaiting quality check"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"
    REMOVED = "removed", "Removed by a reviewer"


class BoxProvenance(models.TextChoices):
    """Where a box came from. A model's proposal is verified, never trusted: it is `model` until QUALITY
    accepts it (then `model+verified`); only accepted boxes reach an export."""

    WORKER = "worker", "Drawn by a worker"
    MODEL = "model", "A model's proposal, not accepted"
    MODEL_VERIFIED = "model+verified", "A model's proposal accepted by the crowd"
