"""`make_splits`: compute a new train/val/test split version of a dataset, stable across versions."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from benchmark.services import BenchmarkError, split_version_create
from benchmark.splits import SplitRatios


def _rule(text: str) -> tuple[str, SplitRatios]:
    source, sep, shares = text.rpartition("=")
    parts = shares.split(":")
    if not sep or not source or len(parts) not in (2, 3):
        raise CommandError(f"--source-rule {text!r}: expected SOURCE=VAL:TEST or SOURCE=TRAIN:VAL:TEST")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise CommandError(f"--source-rule {text!r}: shares must be numbers") from None
    if len(values) == 2:
        values = [max(0.0, 1.0 - sum(values)), *values]
    try:
        return source, SplitRatios(*values)
    except ValueError as exc:
        raise CommandError(f"--source-rule {text!r}: {exc}") from None


class Command(BaseCommand):
    help = (
        "Assign the dataset's images to train/val/test: seeded, stratified by class, near-duplicates kept "
        "together. Images of the latest frozen version keep their split; new images fill the ratios. Prints "
        "the new version's manifest as JSON."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, metavar="NAME")
        parser.add_argument("--train", type=float, default=0.6)
        parser.add_argument("--val", type=float, default=0.13)
        parser.add_argument("--test", type=float, default=0.27)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--source-rule",
            action="append",
            default=[],
            metavar="SOURCE=VAL:TEST",
            help="Other shares for images whose source starts with SOURCE, e.g. 'flickr=0.33:0.67' "
            "(ILSVRC DET's val/test rule); repeatable.",
        )
        parser.add_argument("--freeze", action="store_true", help="Freeze the new version.")

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {options['dataset']!r}")
        try:
            ratios = SplitRatios(options["train"], options["val"], options["test"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        rules = dict(_rule(r) for r in options["source_rule"])
        try:
            version = split_version_create(
                dataset=dataset,
                ratios=ratios,
                seed=options["seed"],
                source_rules=rules,
                freeze=options["freeze"],
            )
        except BenchmarkError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(
            f"split version {version.number} of {dataset.name}: "
            + ", ".join(f"{k} {v}" for k, v in version.manifest["counts"].items())
            + (" (frozen)" if version.frozen else " (not frozen: run again with --freeze to keep it)")
        )
        self.stdout.write(
            json.dumps({"version": version.number, "frozen": version.frozen, **version.manifest})
        )
