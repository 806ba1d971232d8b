"""Candidate collection: URL-list imports with one row per listed image, and the candidate pool they fill, the
(image, concept, query) rows that verification takes as its input (docs/candidates.md)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ImportState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"


class CandidateImport(models.Model):
    """One import of a URL list (or bucket prefix) into a dataset; its counts are the progress people see."""

    dataset = models.ForeignKey(
        "annotation.Dataset", on_delete=models.CASCADE, related_name="candidate_imports"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source_name = models.CharField(max_length=500, help_text="The file name or bucket URL imported.")
    state = models.CharField(max_length=16, choices=ImportState.choices, default=ImportState.QUEUED)
    total = models.PositiveIntegerField(default=0)
    stored = models.PositiveIntegerField(default=0, help_text="Rows whose image was downloaded and stored.")
    duplicates = models.PositiveIntegerField(
        default=0, help_text="Rows whose bytes were in the dataset already (linked to that image)."
    )
    skipped = models.PositiveIntegerField(default=0, help_text="Rows whose URL an earlier import fetched.")
    failed = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"import {self.pk} of {self.source_name} [{self.state}]"

    @property
    def done_rows(self) -> int:
        return self.stored + self.duplicates + self.skipped + self.failed


class RowState(models.TextChoices):
    PENDING = "pending", "Pending"
    STORED = "stored", "Stored"  # downloaded, valid, a new image
    DUPLICATE = "duplicate", "Duplicate"  # downloaded, the same bytes as an image already in the dataset
    SKIPPED = "skipped", "Skipped"  # an earlier import fetched this URL already
    FAILED = "failed", "Failed"  # refused or not an image: `reason` says why


class CandidateRow(models.Model):
    """One listed image of an import: where it is, what it should show and which query found it. A bucket
    object is one more row (url `s3://bucket/key`, source "bucket")."""

    job = models.ForeignKey(CandidateImport, on_delete=models.CASCADE, related_name="rows")
    line = models.PositiveIntegerField(help_text="Line (CSV) or record (JSONL) number in the imported file.")
    url = models.CharField(max_length=2000)
    concept = models.ForeignKey(
        "hierarchy.Concept", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    query = models.CharField(max_length=500, blank=True)
    source = models.CharField(max_length=100, blank=True)
    state = models.CharField(max_length=16, choices=RowState.choices, default=RowState.PENDING)
    reason = models.CharField(max_length=500, blank=True)
    image = models.ForeignKey(
        "annotation.Image", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job_id", "line"]
        constraints = [models.UniqueConstraint(fields=["job", "line"], name="candidate_row_unique_line")]
        indexes = [models.Index(fields=["job", "state"], name="candidate_row_job_state")]

    def __str__(self) -> str:
        return f"{self.url} [{self.state}]"


class Candidate(models.Model):
    """A pool entry: this image is a candidate for this concept, found by this query. The pool of a concept
    in a dataset is the input of its verification (consensus.verification); one image may be found by several
    queries, each kept (per-query precision reports count them)."""

    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.CASCADE, related_name="candidates")
    concept = models.ForeignKey("hierarchy.Concept", on_delete=models.PROTECT, related_name="candidates")
    image = models.ForeignKey("annotation.Image", on_delete=models.CASCADE, related_name="candidacies")
    query = models.CharField(max_length=500, blank=True)
    source = models.CharField(max_length=100, blank=True)
    url = models.CharField(max_length=2000)
    row = models.ForeignKey(CandidateRow, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "concept", "image", "query"], name="candidate_unique_image_concept_query"
            )
        ]
        indexes = [models.Index(fields=["dataset", "concept"], name="candidate_dataset_concept")]

    def __str__(self) -> str:
        return f"image {self.image_id} for {self.concept_id} ({self.query!r})"


class SourceBucket(models.Model):
    """A bucket the dataset's organizers registered as a source of `s3://bucket/key` candidate rows: the only
    buckets an import of that dataset reads (candidates.sources). Read with the organizer's own access key on
    the platform's S3 endpoint or another the operator approved, or with the platform's own credentials when the
    operator granted the bucket to this dataset (`CROWDLABEL_SOURCE_BUCKET_GRANTS`). The secret is stored
    encrypted and never shown again."""

    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.CASCADE, related_name="source_buckets")
    bucket = models.CharField(max_length=63)
    endpoint_url = models.CharField(
        max_length=200, blank=True, help_text="Empty: the platform's S3 endpoint (AWS_S3_ENDPOINT_URL)."
    )
    region = models.CharField(max_length=50, blank=True)
    access_key_id = models.CharField(
        max_length=128, blank=True, help_text="Empty: the platform's credentials, for a bucket granted to it."
    )
    secret_sealed = models.TextField(blank=True, help_text="The secret access key, encrypted.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "bucket"], name="source_bucket_one_per_dataset")
        ]

    def __str__(self) -> str:
        return f"s3://{self.bucket} for dataset {self.dataset_id}"

    @property
    def credentials(self) -> str:
        return "own" if self.access_key_id else "granted"
