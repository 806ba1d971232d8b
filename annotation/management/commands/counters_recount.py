"""`counters_recount`: rebuild the per-dataset counters (box tally, usage per stage and concept, answers per
worker) from the facts."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from annotation.counters import counters_recount
from annotation.models import Dataset


class Command(BaseCommand):
    help = (
        "Recount the counters the organizer's progress, cost and people pages read (boxes drawn and accepted; "
        "tasks, answers and worker-seconds per stage and concept; answers per worker) from the boxes, tasks "
        "and answers, and write back "
        "the ones that differ. For repairs, and after loading rows around the services (COPY, bulk imports). "
        "Every dataset, or those named with --dataset."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dataset", type=int, action="append", metavar="ID", help="A dataset id (repeatable)."
        )

    def handle(self, *args, **options):
        wanted = options["dataset"]
        datasets = Dataset.objects.order_by("id")
        if wanted:
            found = set(datasets.filter(pk__in=wanted).values_list("pk", flat=True))
            missing = sorted(set(wanted) - found)
            if missing:
                raise CommandError(f"no dataset with id {', '.join(map(str, missing))}")
            datasets = datasets.filter(pk__in=wanted)
        for dataset in datasets:
            t0 = time.perf_counter()
            changed = counters_recount(dataset.pk)
            self.stdout.write(
                f"dataset {dataset.pk} ({dataset.name}): {changed} counter row(s) corrected "
                f"in {time.perf_counter() - t0:.1f} s"
            )
