"""`dataset_stats`: the dataset's statistics per split (Markdown, JSON and PNG plots), with a comparison
against ILSVRC 2014 and PASCAL VOC 2012 figures."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from benchmark.dataset_stats import write_report
from benchmark.models import DetectionSet, SplitVersion
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
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {options['dataset']!r}")
        version = None
        if options["split_version"] is not None:
            version = SplitVersion.objects.filter(dataset=dataset, number=options["split_version"]).first()
            if version is None:
                raise CommandError(f"dataset {dataset.name} has no split version {options['split_version']}")
        detection_set = None
        if options["detection_set"]:
            detection_set = DetectionSet.objects.filter(
                dataset=dataset, name=options["detection_set"]
            ).first()
            if detection_set is None:
                raise CommandError(
                    f"dataset {dataset.name} has no detection set {options['detection_set']!r}"
                )
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
