"""Frozen split versions, export jobs, and challenges with teams, submissions and their scores."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Dataset, Image


class SplitName(models.TextChoices):
    TRAIN = "train", "Train"
    VAL = "val", "Validation"
    TEST = "test", "Test"


class SplitVersion(models.Model):
    """One computed train/val/test assignment of a dataset. Once frozen it never changes, and the next
    version starts from it: an image once in val or test stays there."""

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="split_versions")
    number = models.PositiveIntegerField()
    seed = models.BigIntegerField()
    ratios = models.JSONField(help_text='{"train": 0.6, "val": 0.13, "test": 0.27}')
    source_rules = models.JSONField(default=dict, blank=True)
    manifest = models.JSONField()
    frozen = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset", "number"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "number"], name="split_version_unique_number")
        ]

    def __str__(self) -> str:
        return f"{self.dataset} splits v{self.number}{' (frozen)' if self.frozen else ''}"

    @property
    def label(self) -> str:
        return f"v{self.number}-{self.manifest.get('version_hash', '')}"


class ImageSplit(models.Model):
    version = models.ForeignKey(SplitVersion, on_delete=models.CASCADE, related_name="images")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="splits")
    split = models.CharField(max_length=8, choices=SplitName.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "image"], name="image_split_unique_per_version")
        ]
        indexes = [models.Index(fields=["version", "split", "image"], name="image_split_lookup_idx")]

    def __str__(self) -> str:
        return f"image {self.image_id} in {self.split} (v{self.version_id})"


class ExportFormat(models.TextChoices):
    COCO = "coco", "COCO JSON"
    VOC = "voc", "PASCAL VOC"
    ILSVRC = "ilsvrc", "ILSVRC"
    YOLO = "yolo", "YOLO"
    IMAGEFOLDER = "imagefolder", "Image folders"


class ExportSplit(models.TextChoices):
    TRAIN = "train", "Train"
    VAL = "val", "Validation"
    TEST = "test", "Test (labels withheld)"
    ALL = "all", "All (test labels withheld)"


class ExportFileNames(models.TextChoices):
    ID = "id", "Image ids (every format)"
    ORIGINAL = "original", "The names the images were uploaded with (COCO; shared names get the id added)"


class JobState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class ExportJob(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="export_jobs")
    split_version = models.ForeignKey(SplitVersion, null=True, blank=True, on_delete=models.PROTECT)
    format = models.CharField(max_length=16, choices=ExportFormat.choices)
    split = models.CharField(max_length=8, choices=ExportSplit.choices, default=ExportSplit.ALL)
    include_images = models.BooleanField(default=True)
    provenance = models.BooleanField(default=False)
    include_provisional = models.BooleanField(
        default=False,
        help_text="Also write accepted boxes that are not final yet (an overlap check pending, a review item "
        "open); the manifest says so. Default: final labels only.",
    )
    detection_set = models.CharField(
        max_length=100,
        blank=True,
        default="",
        help_text="Name of the detection set exported (empty: every class).",
    )
    file_names = models.CharField(
        max_length=8,
        choices=ExportFileNames.choices,
        default=ExportFileNames.ID,
        help_text="What the images are called inside the export (benchmark/exporters/file_names.py).",
    )
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED)
    progress = models.PositiveIntegerField(default=0, help_text="Images written so far.")
    total = models.PositiveIntegerField(default=0, help_text="Images to write.")
    file = models.FileField(upload_to="exports/", max_length=300, blank=True)
    manifest = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            # One export of the same content in flight at a time: a repeated POST joins it.
            models.UniqueConstraint(
                fields=[
                    "dataset",
                    "split_version",
                    "format",
                    "split",
                    "include_images",
                    "provenance",
                    "detection_set",
                    "include_provisional",
                    "file_names",
                ],
                condition=Q(state__in=["queued", "running"]),
                name="export_job_one_in_flight",
            ),
            # NULLs are distinct in unique indexes (and SQLite has no NULLS NOT DISTINCT): unsplit exports
            # get their own constraint.
            models.UniqueConstraint(
                fields=[
                    "dataset",
                    "format",
                    "split",
                    "include_images",
                    "provenance",
                    "detection_set",
                    "include_provisional",
                    "file_names",
                ],
                condition=Q(state__in=["queued", "running"], split_version__isnull=True),
                name="export_job_one_in_flight_unsplit",
            ),
        ]

    def __str__(self) -> str:
        return f"export {self.pk} of {self.dataset_id} ({self.format}, {self.split}, {self.state})"


class Challenge(models.Model):
    """A benchmark over the test split of one frozen split version, scored with one protocol."""

    name = models.SlugField(max_length=100, unique=True)
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="challenges")
    split_version = models.ForeignKey(SplitVersion, on_delete=models.PROTECT, related_name="challenges")
    protocol = models.CharField(max_length=16)
    ground_truth = models.FileField(
        upload_to="challenges/", max_length=300, blank=True, help_text="Hidden test labels (built once)."
    )
    submissions_per_window = models.PositiveSmallIntegerField(default=2)
    window_days = models.PositiveSmallIntegerField(default=7)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name


class Team(models.Model):
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="teams")
    name = models.CharField(max_length=100)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="teams")

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["challenge", "name"], name="team_unique_name")]

    def __str__(self) -> str:
        return self.name


class SubmissionState(models.TextChoices):
    PENDING = "pending", "Waiting to be scored"
    SCORED = "scored", "Scored"
    FAILED = "failed", "Scoring failed"


class Submission(models.Model):
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="submissions")
    submitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    file = models.FileField(upload_to="submissions/", max_length=300)
    state = models.CharField(max_length=16, choices=SubmissionState.choices, default=SubmissionState.PENDING)
    scores = models.JSONField(null=True, blank=True)
    errors = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    scored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["team", "created_at"], name="submission_team_time_idx")]

    def __str__(self) -> str:
        return f"submission {self.pk} of {self.team} ({self.state})"


class DetectionSet(models.Model):
    """An organizer's class list for a detection benchmark over a dataset (ILSVRC §3.1.1, §3.3): the selected
    classes, the fine classes merged into each (basic-level merging), the rules applied and their report.
    Freezing pins it to a frozen split version and snapshots the blacklist and box attributes, so later flags
    change nothing in it."""

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="detection_sets")
    name = models.SlugField(max_length=100)
    classes = models.JSONField(help_text="Concept ids of the selected classes, sorted.")
    merges = models.JSONField(default=dict, blank=True, help_text='{"fine concept id": selected concept id}')
    max_area_share = models.FloatField(null=True, blank=True)
    min_instances = models.PositiveIntegerField(default=0)
    report = models.JSONField(default=dict, help_text="Per-class statistics, dropped classes and why.")
    split_version = models.ForeignKey(SplitVersion, null=True, blank=True, on_delete=models.PROTECT)
    frozen = models.BooleanField(default=False)
    snapshot = models.JSONField(
        default=dict, blank=True, help_text="At freezing: blacklist pairs, box attributes, negatives."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    frozen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["dataset", "name"]
        constraints = [models.UniqueConstraint(fields=["dataset", "name"], name="detection_set_unique_name")]

    def __str__(self) -> str:
        return f"{self.dataset} detection set {self.name}{' (frozen)' if self.frozen else ''}"

    def mapping(self) -> dict[int, int]:
        """Concept id -> the selected class it is exported as (selected classes map to themselves)."""
        out = {int(c): int(c) for c in self.classes}
        out.update({int(k): int(v) for k, v in self.merges.items()})
        return out


class BlacklistEntry(models.Model):
    """A reviewer's flag: this image is too ambiguous to localize (a bunch of bananas, a crowd; ILSVRC §3.3
    discarded 3.5% of CLS-LOC val), for one class or (concept empty) for every class. Its boxes leave the
    localization truth. Lifting is a state (``lifted_at``), never a deletion."""

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="blacklist")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="blacklist_entries")
    concept = models.ForeignKey(
        "hierarchy.Concept", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    reason = models.CharField(max_length=200)
    flagged_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    lifted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["image", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["image", "concept"],
                condition=Q(lifted_at__isnull=True, concept__isnull=False),
                name="blacklist_one_active_per_class",
            ),
            models.UniqueConstraint(
                fields=["image"],
                condition=Q(lifted_at__isnull=True, concept__isnull=True),
                name="blacklist_one_active_whole_image",
            ),
        ]

    def __str__(self) -> str:
        return f"image {self.image_id} blacklisted for {self.concept_id or 'every class'}"


class Viewpoint(models.TextChoices):
    FRONTAL = "frontal", "Frontal"
    REAR = "rear", "Rear"
    LEFT = "left", "Left"
    RIGHT = "right", "Right"
    UNSPECIFIED = "unspecified", "Unspecified"


class BoxAttributes(models.Model):
    """PASCAL VOC's per-object attributes (§3.3) as a reviewer set them. Append-only: the latest row of a box
    is its current attributes. ``truncated`` empty means "not said" (exports then use the image border)."""

    box = models.ForeignKey("annotation.Box", on_delete=models.PROTECT, related_name="attribute_rows")
    difficult = models.BooleanField(default=False)
    truncated = models.BooleanField(null=True, blank=True)
    occluded = models.BooleanField(default=False)
    viewpoint = models.CharField(max_length=16, choices=Viewpoint.choices, default=Viewpoint.UNSPECIFIED)
    set_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["box", "-id"]
        indexes = [models.Index(fields=["box", "-id"], name="box_attributes_latest_idx")]

    def __str__(self) -> str:
        return f"attributes of box {self.box_id} ({self.created_at:%Y-%m-%d})"


class ReportKind(models.TextChoices):
    DATASET_STATISTICS = "dataset_statistics", "Dataset statistics"
    CLASS_STATISTICS = "class_statistics", "Per-class statistics"


class Report(models.Model):
    """A report computed over a whole dataset's labels in the background (benchmark/reports.py): a page reads
    the newest finished one (fast at any size) while a fresher one is computed. `key` is the canonical form of
    `params` (which split version, which detection set)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="reports")
    kind = models.CharField(max_length=32, choices=ReportKind.choices)
    key = models.CharField(max_length=300)
    params = models.JSONField(default=dict)
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED)
    body = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            # One computation of the same report in flight at a time: a second request joins it.
            models.UniqueConstraint(
                fields=["dataset", "kind", "key"],
                condition=Q(state__in=["queued", "running"]),
                name="report_one_pending",
            )
        ]
        indexes = [models.Index(fields=["dataset", "kind", "key", "state"], name="report_lookup")]

    def __str__(self) -> str:
        return f"{self.kind} of dataset {self.dataset_id} ({self.key}) [{self.state}]"
