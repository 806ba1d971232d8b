"""`final_labels_rebuild`: backfill a dataset's final labels and boxes from its decided questions, Algorithm 1's
leaf labels, finished votes and the boxes through the review gate (data from before final labels existed, or
after a repair). Prints a JSON report per dataset."""

from __future__ import annotations

import json
from dataclasses import asdict

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from benchmark.final_labels import final_labels_rebuild


class Command(BaseCommand):
    help = (
        "Rebuild the final labels (image-level presence and verified absence, and finalized boxes) of one "
        "dataset, or of every dataset, from the pipelines' decisions. Safe to run again."
    )

    def add_arguments(self, parser):
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--dataset", metavar="NAME")
        group.add_argument("--all", action="store_true", help="Every dataset.")

    def handle(self, *args, **options):
        if options["all"]:
            datasets = list(Dataset.objects.order_by("id"))
        else:
            datasets = list(Dataset.objects.filter(name=options["dataset"]))
            if not datasets:
                raise CommandError(f"no dataset named {options['dataset']!r}")
        for dataset in datasets:
            report = final_labels_rebuild(dataset)
            self.stdout.write(json.dumps({"dataset": dataset.name, **asdict(report)}, sort_keys=True))
