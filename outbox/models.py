"""One row per piece of background work, written in the transaction of the state change that calls for it."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class MessageState(models.TextChoices):
    PENDING = "pending", "Pending"  # committed, not (yet) on the broker; the relay sends it
    SENT = "sent", "Sent"  # handed to the broker
    RUNNING = "running", "Running"  # a worker started it
    DONE = "done", "Done"
    PARKED = "parked", "Parked"  # failed or killed its worker on every attempt: waits for a person


class Message(models.Model):
    """A Celery task call (name and JSON arguments) that must happen because a transaction committed.

    The row is the truth; the broker message only carries its id, so a lost, repeated or redelivered message
    changes nothing twice (`outbox.services.message_run`)."""

    task_name = models.CharField(max_length=200)
    args = models.JSONField(default=list, blank=True)
    kwargs = models.JSONField(default=dict, blank=True)
    # Whose work it is, so the dataset's organizers see it when it is parked.
    dataset = models.ForeignKey(
        "annotation.Dataset", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    state = models.CharField(max_length=16, choices=MessageState.choices, default=MessageState.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    # Not before: a countdown, or the back-off after a failed attempt.
    available_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # While running: the worker holds the row until then and renews it as it goes (outbox.services.Heartbeat);
    # a running row whose lease has passed lost its worker, and the relay sends it again.
    lease_until = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The Celery task id of the delivery that is running it: a redelivery of the same message (its worker
    # was lost) is a new attempt; another message for the same row while it runs is a duplicate.
    delivery = models.CharField(max_length=64, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["state", "available_at"], name="outbox_state_available"),
            models.Index(fields=["state", "lease_until"], name="outbox_state_lease"),
        ]
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.task_name}{tuple(self.args)} [{self.state}, {self.attempts} attempts]"
