"""`ingest_images`: store image files and folders into a dataset, report each refused file with its reason, and
optionally queue plain votes on the stored images (which is why it lives in consensus, the app that asks them)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotation.ingest import IngestItem, IngestReport, images_ingest, item_read
from annotation.management.datasets import dataset_named
from annotation.models import Dataset
from consensus.binary_vote import vote_tasks_create
from hierarchy.models import Concept


class Command(BaseCommand):
    help = (
        "Ingest image files into a dataset. Each PATH is a file or a folder (walked recursively; every file "
        "in it is tried). Good files are stored, files that are not valid images are refused with a reason, "
        "exact duplicates of images already in the dataset are named and not stored twice, near-duplicates "
        "are stored and flagged. With --concept, a yes/no vote task "
        "is queued for every stored image."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="PATH", help="Image files or folders.")
        parser.add_argument("--dataset", required=True, metavar="NAME", help="Name of the target dataset.")
        parser.add_argument(
            "--create-dataset", action="store_true", help="Create the dataset if it does not exist yet."
        )
        parser.add_argument(
            "--concept", metavar="WNID", help="Queue 'does this image show CONCEPT?' votes for stored images."
        )
        parser.add_argument(
            "--answers-wanted", type=int, default=3, help="Votes per task with --concept (default 3)."
        )
        parser.add_argument("--source", default="", help="Provenance recorded on every stored image.")
        parser.add_argument("--no-progress", action="store_true", help="Do not show the progress bar.")

    def handle(self, *args, **options):
        # Check everything cheap before touching a single file, so a typo fails fast and stores nothing.
        files = _files_under([Path(p) for p in options["paths"]])
        if not files:
            raise CommandError(f"no files found under {', '.join(options['paths'])}")
        concept = _concept(options["concept"])
        if concept is not None and options["answers_wanted"] < 1:
            raise CommandError("--answers-wanted must be at least 1")
        dataset = dataset_named(options["dataset"], create=options["create_dataset"])

        unreadable: list[tuple[str, str]] = []
        bar = tqdm(
            total=len(files),
            unit="file",
            file=sys.stderr,
            disable=options["no_progress"] or not sys.stderr.isatty(),
        )
        with bar:
            report = images_ingest(
                dataset=dataset,
                items=_items(files, options["source"], unreadable, bar),
                progress=lambda name: bar.update(1),
            )
        report.rejected.extend(unreadable)

        self._summary(dataset, len(files), report)
        if concept is not None and report.stored:
            tasks = vote_tasks_create(
                dataset=dataset,
                concept=concept,
                images=report.stored,
                answers_wanted=options["answers_wanted"],
            )
            self.stdout.write(f"Queued {len(tasks)} vote tasks for {concept.wnid} ({concept.name}).")
        if report.nothing_new:
            # Re-running over an already ingested folder is not an error: everything is there already.
            self.stdout.write("Every file is already in the dataset; nothing to do.")
        elif not report.stored:
            raise CommandError(f"none of the {len(files)} files was stored (reasons above)")

    def _summary(self, dataset: Dataset, total: int, report: IngestReport) -> None:
        out = self.stdout
        out.write(
            f"Dataset {dataset.name!r}: stored {len(report.stored)} of {total} files, "
            f"{len(report.near_duplicates)} flagged as near-duplicates, {len(report.rejected)} rejected, "
            f"{len(report.already_stored)} already in the dataset."
        )
        for name, pk in report.already_stored:
            out.write(f"  {name}: already in the dataset as image {pk}")
        if report.near_duplicates:
            out.write("Near-duplicates (stored, flagged for review):")
            for image in report.near_duplicates:
                out.write(
                    f"  {image.original_name}: image {image.pk} resembles image {image.near_duplicate_of_id}"
                )
        if report.rejected:
            out.write("Rejected:")
            for name, reason in report.rejected:
                out.write(f"  {name}: {reason}")


def _files_under(paths: list[Path]) -> list[Path]:
    """Every file named or found under a named folder, in a stable order. Only the names are listed up
    front (for the progress total); the bytes are read one file at a time."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise CommandError(f"no such file or folder: {', '.join(missing)}")
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            for folder, subfolders, names in os.walk(path):
                subfolders.sort()
                files.extend(Path(folder) / name for name in sorted(names))
        else:
            files.append(path)
    return files


def _items(
    files: list[Path], source: str, unreadable: list[tuple[str, str]], bar: tqdm
) -> Iterator[IngestItem]:
    """One item at a time, so memory holds a single file however big the folder is."""
    for path in files:
        try:
            with path.open("rb") as stream:
                item = item_read(str(path), stream, size=os.fstat(stream.fileno()).st_size, source=source)
        except OSError as exc:
            # Unreadable files (permissions, vanished, a folder's broken link) are refused like bad images.
            unreadable.append((str(path), f"cannot read the file ({exc.strerror or exc})"))
            bar.update(1)
            continue
        yield item


def _concept(wnid: str | None) -> Concept | None:
    if wnid is None:
        return None
    concept = Concept.objects.filter(wnid=wnid).first()
    if concept is None:
        raise CommandError(f"no concept with wnid {wnid!r}; load the hierarchy first")
    return concept
