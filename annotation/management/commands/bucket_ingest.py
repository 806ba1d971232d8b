"""`bucket_ingest`: store the images under an S3 bucket prefix into a dataset, resumable after the last key done."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotation.buckets import (
    BucketError,
    BucketLocation,
    bucket_object_read,
    bucket_objects,
    bucket_url_parse,
)
from annotation.ingest import IngestItem, images_ingest
from annotation.management.datasets import dataset_named
from annotation.models import BucketCursor, Dataset

CURSOR_SAVE_SECONDS = 1.0


class Command(BaseCommand):
    help = (
        "Ingest the images under s3://bucket/prefix into a dataset through the same checks as ingest_images. "
        "Keys already stored in the dataset from this bucket are skipped without being downloaded; with "
        "--resume the listing starts after the last key the previous run dealt with."
    )

    def add_arguments(self, parser):
        parser.add_argument("url", metavar="s3://BUCKET/PREFIX", help="The bucket prefix to ingest.")
        parser.add_argument("--dataset", required=True, metavar="NAME", help="Name of the target dataset.")
        parser.add_argument(
            "--create-dataset", action="store_true", help="Create the dataset if it does not exist yet."
        )
        parser.add_argument(
            "--resume", action="store_true", help="Start after the last key the previous run dealt with."
        )
        parser.add_argument("--no-progress", action="store_true", help="Do not show the progress bar.")

    def handle(self, *args, **options):
        try:
            location = bucket_url_parse(options["url"])
        except BucketError as exc:
            raise CommandError(str(exc)) from None
        dataset = dataset_named(options["dataset"], create=options["create_dataset"])
        url = str(location)
        cursor = BucketCursor.objects.filter(dataset=dataset, url=url).first()
        start_after = cursor.last_key if options["resume"] and cursor is not None else None
        if start_after:
            self.stdout.write(f"Resuming after {start_after!r}.")

        bar = tqdm(unit="object", file=sys.stderr, disable=options["no_progress"] or not sys.stderr.isatty())
        run = _Run(dataset, location, bar)
        with bar:
            try:
                report = images_ingest(dataset=dataset, items=run.items(start_after), progress=run.done)
            except BucketError as exc:
                # Listing failed (missing bucket, denied access, endpoint down): what was done is kept and
                # remembered, so --resume carries on from there.
                done = f" (after {run.listed} objects; --resume carries on from there)" if run.listed else ""
                raise CommandError(f"{exc}{done}") from None
            finally:
                run.save()
        report.rejected.extend(run.rejected)

        out = self.stdout
        out.write(
            f"Dataset {dataset.name!r} from {url}: {run.listed} objects listed, stored {len(report.stored)}, "
            f"{run.skipped + len(report.already_stored)} already stored (skipped), "
            f"{len(report.near_duplicates)} flagged as "
            f"near-duplicates, {len(report.rejected)} rejected."
        )
        for image in report.near_duplicates:
            out.write(
                f"  {image.original_name}: image {image.pk} resembles image {image.near_duplicate_of_id}"
            )
        if report.rejected:
            out.write("Rejected:")
            for name, reason in report.rejected:
                out.write(f"  {name}: {reason}")
        if run.listed == 0 and start_after is None:
            raise CommandError(f"no objects under {url}")
        if not report.stored and report.rejected:
            raise CommandError(f"none of the {len(report.rejected)} new objects was stored (reasons above)")


class _Run:
    """One pass over the listing: which keys are already in the dataset, which were refused before decoding,
    and the cursor moved past every key dealt with."""

    def __init__(self, dataset: Dataset, location: BucketLocation, bar: tqdm):
        self.dataset = dataset
        self.location = location
        self.bar = bar
        self.base = f"s3://{location.bucket}/"
        self.stored_sources = set(
            dataset.images.filter(source__startswith=str(location)).values_list("source", flat=True)
        )
        self.listed = 0
        self.skipped = 0
        self.rejected: list[tuple[str, str]] = []
        self.last_key: str | None = None
        self.saved_key: str | None = None
        self.saved_at = time.monotonic()

    def items(self, start_after: str | None) -> Iterator[IngestItem]:
        """One object at a time: memory holds a single image however big the prefix is."""
        url = str(self.location)
        max_bytes = settings.CROWDLABEL["MAX_IMAGE_BYTES"]
        for obj in bucket_objects(url, start_after=start_after):
            self.listed += 1
            source = self.base + obj.key
            if source in self.stored_sources:
                self.skipped += 1
                self.done(obj.key)
                continue
            try:
                data = bucket_object_read(url, obj.key, max_bytes=max_bytes)
            except BucketError as exc:
                self.rejected.append((obj.key, str(exc)))
                self.done(obj.key)
                continue
            yield IngestItem(name=obj.key, data=data, source=source, size=obj.size)

    def done(self, key: str) -> None:
        """The key is dealt with (stored, skipped or refused). The cursor is written at most once a second (a
        commit per key would cost more than listing it) and when the run ends, however it ends; a killed
        process loses at most that second, whose stored keys the resumed run skips without downloading."""
        self.last_key = key
        self.bar.update(1)
        if time.monotonic() - self.saved_at >= CURSOR_SAVE_SECONDS:
            self.save()

    def save(self) -> None:
        if self.last_key is not None and self.last_key != self.saved_key:
            BucketCursor.objects.update_or_create(
                dataset=self.dataset, url=str(self.location), defaults={"last_key": self.last_key}
            )
            self.saved_key = self.last_key
        self.saved_at = time.monotonic()
