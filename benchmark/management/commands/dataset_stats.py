"""`dataset_stats`: the dataset's statistics per split (Markdown, JSON and PNG plots), with a comparison
against ILSVRC 2014 and PASCAL VOC 2012 figures."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmark.dataset_stats import write_report
from benchmark.management.targets import command_target
from benchmark.services import BenchmarkError, export_source


class Command(BaseCommand):
    help = (
        "Write README.md, statistics.json and PNG plots of the dataset (or of one detection set) to --out: "
        "images, instances, classes per image, instances per class, object scale and clutter per split. The "
        "test split's labels are withheld unless --include-test."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, metavar="NAME")
        parser.add_argument("--out", required=True, metavar="DIR")
        parser.add_argument("--detection-set", metavar="SET")
        parser.add_argument(
            "--split-version", type=int, help="Split version number (default: latest frozen)."
        )
        parser.add_argument("--include-test", action="store_true", help="Also describe the test labels.")

    def handle(self, *args, **options):
        dataset, version, detection_set = command_target(options)
        out = Path(options["out"])
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise CommandError(f"{out} is not an empty directory")
        try:
            source = export_source(dataset, "all", version, detection_set)
        except BenchmarkError as exc:
            raise CommandError(str(exc)) from None
        figures = write_report(source, out, withheld=() if options["include_test"] else ("test",))
        self.stdout.write(
            f"wrote {out / 'README.md'}: "
            + ", ".join(
                f"{s['split']} {s['images']} images {s['instances']} instances" for s in figures["splits"]
            )
        )
