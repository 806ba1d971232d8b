"""`query_precision --dataset NAME --concept WNID`: per query that found candidates for the concept, how many
images it found, how many verification decided, and the share that show the concept."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from candidates.selectors import query_precision
from hierarchy.models import Concept


class Command(BaseCommand):
    help = (
        "Print per-query precision of a concept's candidate pool once verification has decided some of it: "
        "which queries bring noise."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, metavar="NAME")
        parser.add_argument("--concept", required=True, metavar="WNID")

    def handle(self, *args, **opts):
        dataset = Dataset.objects.filter(name=opts["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {opts['dataset']!r}")
        concept = Concept.objects.filter(wnid=opts["concept"]).first()
        if concept is None:
            raise CommandError(f"no concept with wnid {opts['concept']!r}")
        rows = query_precision(dataset, concept)
        if not rows:
            self.stdout.write(f"{concept.wnid} has no candidate pool in {dataset.name}")
            return
        self.stdout.write("precision  present/decided  found  query")
        for row in rows:
            precision = "     -" if row["precision"] is None else f"{row['precision']:6.1%}"
            self.stdout.write(
                f"{precision:>9}  {row['present']:>7}/{row['decided']:<7}  {row['found']:>5}  {row['query'] or '(none)'}"
            )
