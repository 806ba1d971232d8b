"""`manage.py scan_overlaps --dataset NAME`: queue duplicate and cross-class box pairs for review."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from review import scan


class Command(BaseCommand):
    help = (
        "Find duplicate boxes and cross-class overlaps among the accepted boxes of a dataset and queue them "
        "for reviewers. Only accepted boxes not checked yet (new, relabelled or restored) are examined; boxes are "
        "also checked as they are accepted, so this is a catch-up."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name (slug).")
        parser.add_argument(
            "--chunk-images", type=int, default=1000, help="Images per transaction (default 1000)."
        )

    def handle(self, *args, dataset: str, chunk_images: int, **options):
        if chunk_images < 1:
            raise CommandError("--chunk-images must be at least 1")
        found = Dataset.objects.filter(name=dataset).first()
        if found is None:
            names = ", ".join(Dataset.objects.order_by("name").values_list("name", flat=True)[:20]) or "none"
            raise CommandError(f"no dataset named {dataset!r}; datasets: {names}")
        report = scan.overlaps_scan(found, chunk_images=chunk_images)
        self.stdout.write(
            f"scanned {found.name}: {report.images_scanned} images, "
            f"{report.boxes_checked} new or changed boxes, {report.pairs_found} pairs; "
            f"{report.items_created} items queued, {report.items_reopened} reopened, "
            f"{report.items_dismissed} dismissed"
        )
