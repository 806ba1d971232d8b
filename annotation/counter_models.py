"""The counter rows `annotation.counters` keeps so that the organizer's pages read a few rows instead of
aggregating millions: per dataset (`DatasetTally`), per stage and concept (`UsageCounter`), per worker
(`WorkerTally`) and per worker and stage (`WorkerStageTally`). Re-exported by `annotation.models`."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class DatasetTally(models.Model):
    """A dataset's image and box counts, kept exact by `annotation.counters` in the transactions that store
    images, draw boxes and change their state (adding UPDATEs), so the organizer's pages read one row instead of
    counting every image and every box through its image. `manage.py counters_recount` rebuilds it."""

    dataset = models.OneToOneField(
        "annotation.Dataset", on_delete=models.CASCADE, primary_key=True, related_name="tally"
    )
    images = models.BigIntegerField(default=0)
    boxes_drawn = models.BigIntegerField(default=0)
    boxes_accepted = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"tally of dataset {self.dataset_id}"


class UsageCounter(models.Model):
    """Micro-tasks created, answers submitted and worker-seconds (submission minus lease time, in microseconds
    so sums are exact) per stage (the task's topic, a consensus question's kind, else its kind) and concept,
    kept by the queue in the transactions that create tasks and store answers (`annotation.counters`). The cost
    ledger reads these rows instead of grouping every answer."""

    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.CASCADE, related_name="+")
    stage = models.CharField(max_length=64)
    concept = models.ForeignKey(
        "hierarchy.Concept", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    tasks = models.BigIntegerField(default=0)
    answers = models.BigIntegerField(default=0)
    worker_microseconds = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "stage", "concept"],
                condition=Q(concept__isnull=False),
                name="usage_counter_unique_concept",
            ),
            models.UniqueConstraint(
                fields=["dataset", "stage"],
                condition=Q(concept__isnull=True),
                name="usage_counter_unique_none",
            ),
        ]

    def __str__(self) -> str:
        return f"usage of dataset {self.dataset_id}: {self.stage}/{self.concept_id}"


class WorkerTally(models.Model):
    """Submitted answers per dataset and worker (net of answers taken back), kept by the queue in the same
    statement as the usage counter when an answer is stored or withdrawn (`annotation.counters`). A row exists
    for every worker who ever answered in the dataset, so the organizer's People list reads these rows instead
    of grouping every assignment. `manage.py counters_recount` rebuilds them."""

    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.CASCADE, related_name="+")
    worker = models.ForeignKey("crowd.Worker", on_delete=models.CASCADE, related_name="+")
    answers = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["dataset", "worker"], name="worker_tally_unique_key")]

    def __str__(self) -> str:
        return f"answers of worker {self.worker_id} in dataset {self.dataset_id}"


class WorkerStageTally(models.Model):
    """Submitted answers and worker-seconds (submission minus lease time, in microseconds) per dataset, worker and
    stage (as `UsageCounter` counts stages), net of answers taken back, kept in the same statement as the other
    counters when an answer is stored or withdrawn (`annotation.counters`). A worker's history in a dataset reads
    these rows instead of joining the worker's answers to their tasks. A row exists for every stage a worker ever
    answered in the dataset. `manage.py counters_recount` rebuilds them."""

    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.CASCADE, related_name="+")
    worker = models.ForeignKey("crowd.Worker", on_delete=models.CASCADE, related_name="+")
    stage = models.CharField(max_length=64)
    answers = models.BigIntegerField(default=0)
    worker_microseconds = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "worker", "stage"], name="worker_stage_tally_unique_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.stage} answers of worker {self.worker_id} in dataset {self.dataset_id}"
