"""Datasets, images, boxes and the micro-task queue (tasks and their leased assignments)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

# Re-exported: callers keep importing them from here.
from .box_choices import BoxProvenance, BoxState  # noqa: F401
from .counter_models import DatasetTally, UsageCounter, WorkerStageTally, WorkerTally  # noqa: F401


class Dataset(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    organizers = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="datasets", blank=True)
    # Image formats (Pillow names: JPEG, PNG, ...) uploads may use; empty accepts every format ingestion knows.
    image_formats = models.JSONField(default=list, blank=True)
    concepts = models.ManyToManyField(
        "hierarchy.Concept",
        related_name="datasets",
        blank=True,
        help_text="The classes the organizer picked for this dataset.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    archived_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Set: the organizer archived the dataset. It leaves their active list, its tasks and review "
        "items are no longer handed out; its data, labels and exports stay, and restoring clears this.",
    )

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name


def image_upload_path(instance: Image, filename: str) -> str:
    # Content-addressed: a retried upload of the same bytes lands on the same name.
    extension = filename.rsplit(".", 1)[-1].lower() if "." in filename else "bin"
    return f"datasets/{instance.dataset_id}/{instance.sha256[:2]}/{instance.sha256}.{extension}"


class Image(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="images")
    file = models.FileField(upload_to=image_upload_path, max_length=300)
    original_name = models.CharField(max_length=255, blank=True)
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    phash = models.CharField(max_length=16, help_text="64-bit difference hash, hex.")
    source = models.CharField(
        max_length=500, blank=True, help_text="Where the image came from (URL, query...)."
    )
    near_duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="near_duplicates"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Set while excluded (organize/image_exclusion.py): its tasks are not leased, progress, review and exports
    # leave it out. Reversible: a worked-on image cannot be deleted, and its answers are kept.
    excluded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "sha256"], name="image_unique_sha256_per_dataset")
        ]
        # Every lease lists the excluded images (annotation/queue/statements.py).
        indexes = [
            models.Index(fields=["id"], name="image_excluded_idx", condition=Q(excluded_at__isnull=False))
        ]

    def __str__(self) -> str:
        return f"image {self.pk} ({self.original_name})"


class BucketCursor(models.Model):
    """How far `bucket_ingest` got through a bucket prefix for a dataset: the last key it dealt with (stored or
    refused), so `--resume` lists only the keys after it (annotation/buckets.py)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="bucket_cursors")
    url = models.CharField(max_length=1100, help_text="s3://bucket/prefix as given to bucket_ingest.")
    last_key = models.CharField(max_length=1024)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "url"], name="bucket_cursor_one_per_prefix")
        ]

    def __str__(self) -> str:
        return f"{self.url} in {self.dataset_id}: after {self.last_key}"


class Box(models.Model):
    """A bounding box in original-image pixels (continuous coordinates, x2 > x1, y2 > y1)."""

    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="boxes")
    concept = models.ForeignKey("hierarchy.Concept", on_delete=models.PROTECT, related_name="boxes")
    x1 = models.FloatField()
    y1 = models.FloatField()
    x2 = models.FloatField()
    y2 = models.FloatField()
    state = models.CharField(max_length=16, choices=BoxState.choices, default=BoxState.PENDING)
    drawn_by = models.ForeignKey(
        "crowd.Worker", null=True, blank=True, on_delete=models.PROTECT, related_name="boxes"
    )
    provenance = models.CharField(max_length=16, choices=BoxProvenance.choices, default=BoxProvenance.WORKER)
    score = models.FloatField(null=True, blank=True, help_text="A proposal's score in [0, 1]; drawn: None.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(x2__gt=models.F("x1")) & Q(y2__gt=models.F("y1")), name="box_positive_area"
            ),
            models.CheckConstraint(condition=Q(x1__gte=0) & Q(y1__gte=0), name="box_non_negative_origin"),
        ]
        # The organizer's progress counts the boxes of the last minutes (its rate and ETA) by creation time.
        indexes = [models.Index(fields=["created_at"], name="box_created_idx")]

    def __str__(self) -> str:
        return f"box {self.pk} [{self.x1:.0f},{self.y1:.0f},{self.x2:.0f},{self.y2:.0f}]"


class TaskState(models.TextChoices):
    OPEN = "open", "Open"
    LEASED = "leased", "Leased"
    DONE = "done", "Done"
    CANCELLED = "cancelled", "Cancelled"


# Organizers set a task's priority within [-PRIORITY_LIMIT, PRIORITY_LIMIT]; it orders tasks inside their own
# dataset only (the queue takes datasets in turn, annotation/queue/statements.py), and the pipelines' boosts add on top.
PRIORITY_LIMIT = 100


class Task(models.Model):
    """One micro-task: a question about a subject (image, concept, box) that collects answers from distinct
    workers, one lease at a time, until its kind's handler marks it done.

    `payload` is shown to the worker's browser as it is, so it must never hold a known answer."""

    kind = models.CharField(max_length=64)
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="tasks")
    image = models.ForeignKey(Image, null=True, blank=True, on_delete=models.PROTECT, related_name="tasks")
    concept = models.ForeignKey(
        "hierarchy.Concept", null=True, blank=True, on_delete=models.PROTECT, related_name="tasks"
    )
    box = models.ForeignKey(Box, null=True, blank=True, on_delete=models.PROTECT, related_name="tasks")
    payload = models.JSONField(default=dict, blank=True)
    topic = models.CharField(
        max_length=32,
        blank=True,
        default="",
        help_text="What the task asks within its kind (a consensus question's kind); lease policies withhold by it.",
    )
    pool = models.CharField(
        max_length=32,
        blank=True,
        default="",
        help_text="Empty: the open pool every lease takes from. Otherwise a reserved pool (gold) that only a "
        "lease policy's draw takes from.",
    )
    priority = models.IntegerField(default=0, help_text="Higher first.")
    state = models.CharField(max_length=16, choices=TaskState.choices, default=TaskState.OPEN)
    answers_wanted = models.PositiveSmallIntegerField(default=1)
    answers_count = models.PositiveIntegerField(default=0)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True, help_text="Outcome derived from the answers, once done.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        # The lease's order (annotation/queue/statements.py): datasets in turn, then priority and age inside one.
        indexes = [
            models.Index(
                "kind",
                "dataset",
                models.F("priority").desc(),
                "id",
                name="task_open_pool_kind_idx",
                condition=Q(state__in=["open", "leased"], pool=""),
            ),
            # The same order for workers who take any kind: without it every lease sorts all open tasks.
            models.Index(
                "dataset",
                models.F("priority").desc(),
                "id",
                name="task_open_pool_any_kind_idx",
                condition=Q(state__in=["open", "leased"], pool=""),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} task {self.pk} ({self.state})"


class TaskExclusion(models.Model):
    """A worker who must never take this task (e.g. the drawer of the box a quality check is about)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="exclusions")
    worker = models.ForeignKey("crowd.Worker", on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "worker"], name="task_exclusion_unique")]

    def __str__(self) -> str:
        return f"worker {self.worker_id} excluded from task {self.task_id}"


class AssignmentState(models.TextChoices):
    LEASED = "leased", "Leased"
    SUBMITTED = "submitted", "Submitted"
    EXPIRED = "expired", "Lease expired"
    RELEASED = "released", "Skipped by the worker"
    WITHDRAWN = "withdrawn", "Answer taken back by the worker"


class Assignment(models.Model):
    """A worker's lease on a task and, once submitted, their answer. Never edited after submission, except that
    an answer its worker takes back within the undo window becomes `withdrawn` (answer kept) and the task is
    leased to them again as a new row (`queue.assignment_withdraw`)."""

    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="assignments")
    worker = models.ForeignKey("crowd.Worker", on_delete=models.PROTECT, related_name="assignments")
    state = models.CharField(max_length=16, choices=AssignmentState.choices, default=AssignmentState.LEASED)
    # Stamped with the `now` its expiry is computed from, on every path (a gold lease was told apart otherwise).
    leased_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    answer = models.JSONField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=128, blank=True)
    lease_note = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="What the lease policy that drew this task from a reserved pool keeps about the lease (gold: "
        "its purpose). Never shown to the worker.",
    )
    # The lease a `?next=true` submit took in its own transaction, so a retry of that submit (same Idempotency-Key)
    # hands back the same lease while the worker holds it. A plain id: only that retry reads it.
    next_lease_id = models.BigIntegerField(null=True, blank=True)
    # The task's dataset, written with the row on every path (the lease statements, the queue's import, and
    # `queue.writes.assignment_dataset_named` before any other save):
    # one worker's latest answers in one dataset (the organizer's history of a worker) are read on the
    # (worker, dataset, -id) index instead of walking the worker's answers in every dataset with each one's task
    # (bench/queue_scale.py: p99 341 ms at 10,000,000 tasks over 100 datasets, where the queue's turn-taking
    # spreads each worker's answers over all of them). Null only on a row written by a path that bypasses all
    # three (none in the platform).
    dataset = models.ForeignKey(
        Dataset, on_delete=models.PROTECT, related_name="+", null=True, blank=True, db_index=False
    )

    class Meta:
        ordering = ["id"]
        constraints = [
            # A worker answers a task at most once (and so never votes twice on one question); an answer taken
            # back stays as a withdrawn row beside the lease that replaces it.
            models.UniqueConstraint(
                fields=["task", "worker"],
                condition=~Q(state="withdrawn"),
                name="assignment_one_per_worker_per_task",
            ),
            # At most one open lease per task.
            models.UniqueConstraint(
                fields=["task"], condition=Q(state="leased"), name="assignment_one_open_lease"
            ),
        ]
        indexes = [
            models.Index(
                fields=["expires_at"], name="assignment_open_lease_idx", condition=Q(state="leased")
            ),
            # The worker's latest lease, whose dataset the next lease goes past (annotation/queue/statements.py).
            models.Index(fields=["worker", "-id"], name="assignment_worker_latest_idx"),
            # The worker's latest answers in one dataset (organize/worker_history.py).
            models.Index(fields=["worker", "dataset", "-id"], name="assignment_worker_dataset_idx"),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk} of task {self.task_id} to worker {self.worker_id} ({self.state})"


class BoxJobStatus(models.TextChoices):
    """Mirrors `annotation.pipeline.JobStatus`, as a column the organizer's progress queries can count."""

    NEEDS_DRAW = "needs_draw", "Waiting for a box to be drawn"
    AWAITING_QUALITY = "awaiting_quality", "Waiting for the quality check"
    AWAITING_COVERAGE = "awaiting_coverage", "Waiting for the coverage check"
    DONE = "done", "Every instance boxed"
    REVIEW = "review", "Sent to review"


class BoxJob(models.Model):
    """The box pipeline for one (image, concept) pair known to show the concept (ILSVRC §3.2.1).

    `state` is `pipeline.BoxJob.to_dict()`; `status` repeats its status for queries. Both are a cache of the
    append-only `BoxJobEvent` log, written in the same transaction as each event."""

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="box_jobs")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="box_jobs")
    concept = models.ForeignKey("hierarchy.Concept", on_delete=models.PROTECT, related_name="box_jobs")
    status = models.CharField(max_length=20, choices=BoxJobStatus.choices, default=BoxJobStatus.NEEDS_DRAW)
    state = models.JSONField()
    max_boxes = models.PositiveSmallIntegerField()
    max_rounds = models.PositiveSmallIntegerField()
    review_reason = models.CharField(max_length=32, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["image", "concept"], name="box_job_unique_image_concept")
        ]
        indexes = [models.Index(fields=["dataset", "concept", "status"], name="box_job_progress_idx")]

    def __str__(self) -> str:
        return f"box job {self.pk} (image {self.image_id}, concept {self.concept_id}, {self.status})"


class BoxJobEvent(models.Model):
    """One fact of a box job (a box drawn, a skip, a decision), never edited: `pipeline.replay` of a job's
    events in `seq` order rebuilds its state."""

    job = models.ForeignKey(BoxJob, on_delete=models.PROTECT, related_name="events")
    seq = models.PositiveIntegerField()
    event = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job", "seq"]
        constraints = [models.UniqueConstraint(fields=["job", "seq"], name="box_job_event_unique_seq")]

    def __str__(self) -> str:
        return f"event {self.seq} of box job {self.job_id}: {self.event.get('type')}"


class FinalLabelSource(models.TextChoices):
    """The pipeline whose verdict a final label carries (precedence in `annotation.final_evidence`)."""

    BOX = "box", "Finalized boxes"
    CONSENSUS = "consensus", "Image verification decided by consensus or a reviewer"
    MULTILABEL = "multilabel", "Full multi-label annotation (Algorithm 1)"
    BINARY_VOTE = "binary_vote", "Fixed-majority vote"


class FinalLabel(models.Model):
    """The final image-level label of one (image, class): present or verified absent, with the evidence of
    every pipeline that has a verdict on it. The one source of image-level labels for splits and exports.

    A projection of the pipelines' append-only facts (decisions, Algorithm 1's leaf labels, finalized boxes),
    written by `annotation.final_labels` in the transaction of each decision, so it is rewritten when a
    decision is (a reviewed, reopened or voided question, a removed box). No row: nobody knows."""

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="final_labels")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="final_labels")
    concept = models.ForeignKey("hierarchy.Concept", on_delete=models.PROTECT, related_name="final_labels")
    present = models.BooleanField()
    source = models.CharField(max_length=16, choices=FinalLabelSource.choices)
    probability = models.FloatField(null=True, blank=True, help_text="The consensus posterior, when known.")
    yes_count = models.PositiveIntegerField(default=0, help_text="Yes votes behind the deciding verdict.")
    no_count = models.PositiveIntegerField(default=0, help_text="No votes behind the deciding verdict.")
    box_count = models.PositiveIntegerField(default=0, help_text="Finalized boxes of the class.")
    evidence = models.JSONField(default=dict, help_text="Each pipeline's verdict: {source: {present, ...}}.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["image_id", "concept_id"]
        constraints = [
            models.UniqueConstraint(fields=["image", "concept"], name="final_label_one_per_image_concept")
        ]
        indexes = [models.Index(fields=["dataset", "image", "concept"], name="final_label_export_idx")]

    def __str__(self) -> str:
        return f"image {self.image_id} {self.concept_id}: {'present' if self.present else 'absent'}"


class FinalBox(models.Model):
    """An accepted box that passed the review gate (`review.selectors.finalized_boxes`): the boxes exports
    publish. Written by `annotation.final_labels.final_boxes_set` after each overlap scan and review decision;
    a box removed or relabelled by a reviewer leaves (or changes) its row."""

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="final_boxes")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="final_boxes")
    concept = models.ForeignKey("hierarchy.Concept", on_delete=models.PROTECT, related_name="final_boxes")
    box = models.OneToOneField(Box, on_delete=models.PROTECT, related_name="final")
    x1 = models.FloatField()
    y1 = models.FloatField()
    x2 = models.FloatField()
    y2 = models.FloatField()
    finalized_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["image_id", "box_id"]
        indexes = [models.Index(fields=["dataset", "image", "box"], name="final_box_export_idx")]

    def __str__(self) -> str:
        return f"final box {self.box_id} on image {self.image_id}"


class AuditEntry(models.Model):
    """Who started what on a dataset, when, with which parameters (a pipeline start, a settings change).
    Append-only: written by `annotation.audit.audit_record` in the transaction of the action it records."""

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="audit_entries")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    action = models.CharField(max_length=64)
    parameters = models.JSONField(default=dict)
    result = models.JSONField(default=dict, help_text="What the action did (e.g. how many tasks it created).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["dataset", "-id"], name="audit_entry_dataset_idx")]

    def __str__(self) -> str:
        return f"{self.action} on dataset {self.dataset_id} by user {self.actor_id}"


class ExamplePolarity(models.TextChoices):
    POSITIVE = "positive", "Counts"
    NEGATIVE = "negative", "Does not count"


class ExampleState(models.TextChoices):
    SHOWN = "shown", "Shown to workers"
    REMOVED = "removed", "Removed by an organizer"


def example_upload_path(instance: ConceptExample, filename: str) -> str:
    extension = filename.rsplit(".", 1)[-1].lower() if "." in filename else "bin"
    return f"examples/{instance.dataset_id}/{instance.sha256[:2]}/{instance.sha256}.{extension}"


class ConceptExample(models.Model):
    """An example image an organizer attaches to a concept and a task kind of a dataset: what counts (positive)
    or what does not (negative). Every task of that kind and concept shows it beside the question, gold or not.
    Removing it is a state; the row and its file stay."""

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="examples")
    concept = models.ForeignKey("hierarchy.Concept", on_delete=models.PROTECT, related_name="examples")
    kind = models.CharField(max_length=40, help_text="The task kind whose page shows the example.")
    polarity = models.CharField(max_length=10, choices=ExamplePolarity.choices)
    caption = models.CharField(max_length=200, blank=True)
    file = models.FileField(upload_to=example_upload_path, max_length=300)
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    state = models.CharField(max_length=10, choices=ExampleState.choices, default=ExampleState.SHOWN)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    removed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "concept", "kind", "sha256"], name="example_unique_image_per_concept_kind"
            )
        ]
        indexes = [models.Index(fields=["dataset", "concept", "kind"], name="example_task_lookup_idx")]

    def __str__(self) -> str:
        return f"{self.polarity} example {self.pk} of {self.concept_id} for {self.kind}"


INSTRUCTIONS_MAX_CHARS = 5000


class TaskInstructions(models.Model):
    """What the organizer tells the workers of one dataset about one stage of work (image verification, drawing
    a box, ...): plain text, shown on the worker page above the task and in its help sheet. Keyed by the task's
    stage (`counters.task_stage`: a consensus question's kind, else the task kind), so gold and ordinary tasks
    of a stage carry the same text. A setting, edited in place (the audit trail keeps each change)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(
        max_length=40, help_text="The stage the text is about: image_verify, box_draw, ..."
    )
    text = models.TextField(max_length=INSTRUCTIONS_MAX_CHARS)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["dataset", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "kind"], name="task_instructions_unique_dataset_kind")
        ]

    def __str__(self) -> str:
        return f"instructions for {self.kind} in dataset {self.dataset_id}"


class DatasetGrant(models.Model):
    """A dataset a scoped worker may take tasks of. A worker holding at least one grant is scoped: the queue
    leases them tasks of their granted datasets only (`annotation.queue.statements.eligible_where`). A worker
    holding none is unscoped and may take tasks of every dataset: the behaviour before grants existed, kept for
    the accounts made before them and for invitations that name no dataset.

    Made when a worker accepts an invitation that names datasets (`crowd.invitations`). A granted dataset is
    protected from deletion, so no deletion ever turns a scoped worker into an unscoped one."""

    worker = models.ForeignKey("crowd.Worker", on_delete=models.CASCADE, related_name="+")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["worker", "dataset"], name="dataset_grant_unique")]

    def __str__(self) -> str:
        return f"worker {self.worker_id} may work on dataset {self.dataset_id}"


class ReviewerGrant(models.Model):
    """A dataset a scoped reviewer may review. A reviewer holding at least one grant sees, leases and decides
    review items of their granted datasets only (`annotation.scoping.reviewer_dataset_q`), and loads images of
    those datasets only; one holding none is unscoped and reviews every dataset's items (the platform-wide queue,
    the behaviour before reviewer grants existed).

    Made when a reviewer accepts an invitation that names datasets (`crowd.invitations`). A granted dataset is
    protected from deletion, so no deletion ever turns a scoped reviewer into an unscoped one."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["user", "dataset"], name="reviewer_grant_unique")]

    def __str__(self) -> str:
        return f"reviewer {self.user_id} may review dataset {self.dataset_id}"
