"""State changes of the benchmark app: split versions, export runs and jobs. Each write is one atomic block."""

from __future__ import annotations

import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.core.files import File
from django.db import IntegrityError, connections, transaction
from django.utils import timezone

from annotation.models import Dataset, Image
from outbox import services as outbox
from review.scan import overlaps_scan

from . import selectors
from .exporters import FORMATS, ExportOptions, export, export_dataset
from .models import DetectionSet, ExportJob, ImageSplit, JobState, SplitVersion
from .splits import ImageRecord, SplitRatios, make_splits

BULK = 5000


class BenchmarkError(ValueError):
    """Bad input a person can fix (unknown split, no split version...)."""


class UnknownDetectionSet(BenchmarkError):
    """A detection set name the dataset does not have."""


def split_version_create(
    *,
    dataset: Dataset,
    ratios: SplitRatios,
    seed: int = 0,
    source_rules: Mapping[str, SplitRatios] | None = None,
    freeze: bool = False,
) -> SplitVersion:
    """Compute a new split version from the dataset's current images and final labels, keeping every image
    of the latest frozen version where it was (benchmark.splits.make_splits), and store it with its
    manifest in one transaction."""
    source_rules = dict(source_rules or {})
    classes: dict[int, set[int]] = defaultdict(set)
    for label in selectors.image_labels(dataset):
        if label.positive:
            classes[label.image_id].add(label.concept_id)
    groups = selectors.near_duplicate_groups(dataset)
    # A source rule applies to images whose recorded source starts with its key (longest key wins).
    keys = sorted(source_rules, key=len, reverse=True)
    records = []
    for pk, source in Image.objects.filter(dataset=dataset).order_by("id").values_list("id", "source"):
        rule = next((k for k in keys if source.startswith(k)), "")
        records.append(ImageRecord(pk, frozenset(classes.get(pk, ())), groups.get(pk), rule))
    with transaction.atomic():
        # The dataset row serializes version numbering between concurrent runs.
        Dataset.objects.select_for_update(no_key=True).get(pk=dataset.pk)
        previous_version = selectors.split_version_latest(dataset, frozen_only=True)
        previous = selectors.split_assignment(previous_version) if previous_version else None
        try:
            result = make_splits(records, ratios, seed=seed, previous=previous, source_ratios=source_rules)
        except ValueError as exc:
            raise BenchmarkError(str(exc)) from None
        latest = selectors.split_version_latest(dataset)
        manifest = result.manifest.as_dict()
        manifest["previous_version"] = previous_version.number if previous_version else None
        manifest["new_images"] = len(result.new_images)
        version = SplitVersion.objects.create(
            dataset=dataset,
            number=(latest.number + 1) if latest else 1,
            seed=seed,
            ratios={"train": ratios.train, "val": ratios.val, "test": ratios.test},
            source_rules={
                k: dict(zip(("train", "val", "test"), r.as_tuple(), strict=True))
                for k, r in source_rules.items()
            },
            manifest=manifest,
            frozen=freeze,
        )
        rows = (
            ImageSplit(version=version, image_id=pk, split=split) for pk, split in result.assignment.items()
        )
        while batch := [row for _, row in zip(range(BULK), rows, strict=False)]:
            ImageSplit.objects.bulk_create(batch)
    return version


def split_version_freeze(*, version: SplitVersion) -> SplitVersion:
    with transaction.atomic():
        version = SplitVersion.objects.select_for_update(no_key=True).get(pk=version.pk)
        if not version.frozen:
            version.frozen = True
            version.save(update_fields=["frozen"])
    return version


def export_source(
    dataset: Dataset,
    split: str,
    version: SplitVersion | None = None,
    detection_set=None,
    include_provisional: bool = False,
) -> selectors.DatasetSource:
    """The label source of an export; a frozen detection set exports on the split version it was frozen on."""
    if version is None and detection_set is not None and detection_set.frozen:
        version = detection_set.split_version
    if version is None:
        version = selectors.split_version_latest(dataset, frozen_only=True) or selectors.split_version_latest(
            dataset
        )
    if version is None and split != "all":
        raise BenchmarkError(
            f"dataset {dataset.name} has no split version: run make_splits first, or export --split all"
        )
    return selectors.DatasetSource(dataset, version, detection_set, include_provisional=include_provisional)


def export_run(
    *,
    dataset: Dataset,
    format_name: str,
    split: str,
    out: Path,
    include_images: bool = True,
    provenance: bool = False,
    version: SplitVersion | None = None,
    progress: Callable[[int], None] | None = None,
    hidden_truth: bool = True,
    detection_set=None,
    include_provisional: bool = False,
    file_names: str = "id",
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Export to a directory or archive; with ``hidden_truth`` the withheld test labels go beside it. With a
    detection set (``benchmark.detection_sets``) only its classes are exported, merged classes included.

    The dataset's labels are brought up to date first: the overlap check's catch-up runs for every accepted box
    not checked yet (`review.scan`), so a box accepted a moment ago is final, or listed as not final, in this
    export. The manifest's `completeness` says what is left out and why (`benchmark.completeness`); with
    ``include_provisional`` accepted boxes not final yet are written too. The export and its hidden truth are
    read at one moment (`selectors.snapshot`), so what they write agrees while the crowd works on."""
    if format_name not in FORMATS:
        raise BenchmarkError(f"unknown format {format_name!r}; choose from {', '.join(FORMATS)}")
    overlaps_scan(dataset)
    source = export_source(dataset, split, version, detection_set, include_provisional)
    options = ExportOptions(
        split=split,
        include_images=include_images,
        provenance=provenance,
        progress=progress,
        file_names=file_names,  # checked by the exporters (a ValueError, then BenchmarkError)
    )
    try:
        with selectors.snapshot():
            if hidden_truth:
                return export_dataset(source, format_name, out, options)
            return export(source, format_name, out, options), None
    except ValueError as exc:
        raise BenchmarkError(str(exc)) from None


def export_job_request(
    *,
    dataset: Dataset,
    user,
    format_name: str,
    split: str,
    include_images: bool,
    provenance: bool,
    detection_set: str = "",
    include_provisional: bool = False,
    file_names: str = "id",
) -> tuple[ExportJob, bool]:
    """Queue an export job, or return the identical one already in flight (a repeated POST changes nothing).
    The Celery task is enqueued once the row is committed."""
    version = selectors.split_version_latest(dataset, frozen_only=True) or selectors.split_version_latest(
        dataset
    )
    if version is None and split != "all":
        raise BenchmarkError(f"dataset {dataset.name} has no split version: make splits first, or export all")
    if detection_set:
        chosen = (
            DetectionSet.objects.filter(dataset=dataset, name=detection_set)
            .select_related("split_version")
            .first()
        )
        if chosen is None:
            raise UnknownDetectionSet(f"dataset {dataset.name} has no detection set {detection_set!r}")
        if chosen.frozen:
            version = chosen.split_version
    fields = {
        "dataset": dataset,
        "split_version": version,
        "format": format_name,
        "split": split,
        "include_images": include_images,
        "provenance": provenance,
        "detection_set": detection_set,
        "include_provisional": include_provisional,
        "file_names": file_names,
    }
    with transaction.atomic():
        try:
            with transaction.atomic():
                job = ExportJob.objects.create(requested_by=user, **fields)
        except IntegrityError:
            existing = ExportJob.objects.filter(
                state__in=[JobState.QUEUED, JobState.RUNNING], **fields
            ).first()
            if existing is None:  # finished between our insert and this read: ask again
                raise
            return existing, False
        total = Image.objects.filter(dataset=dataset).count()
        ExportJob.objects.filter(pk=job.pk).update(total=total)
        job.total = total
        outbox.message_enqueue("benchmark.tasks.export_job_run", (job.pk,), dataset_id=dataset.pk)
    return job, True


def export_job_run(job_id: int) -> ExportJob:
    """Run a queued job. Idempotent: a finished job is left alone; a job whose worker died while running
    is run again from scratch (the archive is only attached at the end)."""
    with transaction.atomic():
        job = (
            ExportJob.objects.select_for_update(of=("self",), no_key=True)
            .select_related("dataset", "split_version")
            .get(pk=job_id)
        )
        if job.state in (JobState.DONE, JobState.FAILED):
            return job
        job.state = JobState.RUNNING
        job.progress = 0
        job.save(update_fields=["state", "progress"])

    with tempfile.TemporaryDirectory(prefix="export-job-") as scratch, _job_progress(job_id) as progress:
        archive = Path(scratch) / f"{job.dataset.name}-{job.format}-{job.split}-{job.pk}.zip"
        try:
            # The API never hands out hidden test labels: no ground-truth sidecar for jobs.
            manifest, _ = export_run(
                dataset=job.dataset,
                format_name=job.format,
                split=job.split,
                out=archive,
                include_images=job.include_images,
                provenance=job.provenance,
                version=job.split_version,
                progress=progress,
                hidden_truth=False,
                detection_set=(
                    DetectionSet.objects.filter(dataset=job.dataset, name=job.detection_set).first()
                    if job.detection_set
                    else None
                ),
                include_provisional=job.include_provisional,
                file_names=job.file_names,
            )
        except BenchmarkError as exc:
            ExportJob.objects.filter(pk=job_id).update(
                state=JobState.FAILED, error=str(exc), finished_at=timezone.now()
            )
            job.refresh_from_db()
            return job
        with transaction.atomic():
            job = ExportJob.objects.select_for_update(no_key=True).get(pk=job_id)
            with archive.open("rb") as data:
                job.file.save(archive.name, File(data), save=False)
            job.state = JobState.DONE
            job.manifest = manifest
            # The images written are the job's real size: `total` was counted over the whole dataset before the
            # run, while a split (or unlabelled images left out) writes fewer, and a finished job must read 100%.
            job.progress = job.total = sum(manifest["counts"]["images"].values())
            job.finished_at = timezone.now()
            job.save()
    return job


@contextmanager
def _job_progress(job_id: int) -> Iterator[Callable[[int], None]]:
    """The running job's progress callback. Where the export reads inside a snapshot (`selectors.snapshot`:
    a read-only transaction that could neither write the progress nor show it to anyone before it ends), the
    progress goes through a connection of its own, each update committed at once, so the organizer's page
    moves while the export runs; elsewhere through the default connection, as any write. Entered before the
    export takes its snapshot (it asks whether one will be taken)."""
    alias = ExportJob.objects.db
    if not selectors.snapshot_taken(connections[alias]):
        yield lambda done: ExportJob.objects.filter(pk=job_id).update(progress=done)
        return
    own = connections.create_connection(alias)
    table, column = own.ops.quote_name(ExportJob._meta.db_table), own.ops.quote_name("progress")

    def progress(done: int) -> None:
        with own.cursor() as cursor:
            cursor.execute(f"UPDATE {table} SET {column} = %s WHERE id = %s", [done, job_id])

    try:
        yield progress
    finally:
        own.close()


@outbox.on_park("benchmark.tasks.export_job_run")
def _export_job_parked(message) -> None:
    """An export whose runs all failed or lost their worker ends failed, not queued or running for good: the
    organizer sees why, and a new request starts a fresh job."""
    ExportJob.objects.filter(pk=message.args[0], state__in=[JobState.QUEUED, JobState.RUNNING]).update(
        state=JobState.FAILED,
        error=f"the export failed {message.attempts} times: {message.last_error.strip().splitlines()[-1:]}",
        finished_at=timezone.now(),
    )
