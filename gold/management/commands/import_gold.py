"""import_gold --dataset NAME FILE.csv: gold items from a CSV file, every row checked, nothing stored if any
row is bad."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from gold.items import GoldInvalid, gold_items_import_csv


class Command(BaseCommand):
    help = (
        "Import gold items from a CSV file with a header row: kind, concept (wnid), image (id or original "
        "file name), box (id, optional), answer (yes/no), explanation (optional). All rows or none."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        parser.add_argument("file", help="CSV file.")

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {options['dataset']!r}")
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"no such file: {path}")
        try:
            items = gold_items_import_csv(dataset=dataset, text=path.read_text(encoding="utf-8-sig"))
        except GoldInvalid as exc:
            raise CommandError("nothing imported:\n" + "\n".join(exc.errors)) from None
        self.stdout.write(f"imported {len(items)} gold items into {dataset.name}")
