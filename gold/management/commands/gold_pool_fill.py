"""gold_pool_fill [--dataset NAME]: give every gold item without one its pool task (items added before gold
items became pre-created pool tasks; new items get theirs when they are added)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from gold.models import GoldItem
from gold.serving import gold_pool_fill


class Command(BaseCommand):
    help = "Create the queue task of every gold item that has none (all datasets, or one)."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", help="Dataset name (default: every dataset with such items).")

    def handle(self, *args, **options):
        if options["dataset"]:
            dataset = Dataset.objects.filter(name=options["dataset"]).first()
            if dataset is None:
                raise CommandError(f"no dataset named {options['dataset']!r}")
            dataset_ids = [dataset.pk]
        else:
            dataset_ids = sorted(
                set(GoldItem.objects.filter(task__isnull=True).values_list("dataset_id", flat=True))
            )
        total = 0
        for dataset_id in dataset_ids:
            made = gold_pool_fill(dataset_id=dataset_id)
            total += made
            self.stdout.write(f"dataset {dataset_id}: {made} gold item tasks made")
        self.stdout.write(f"{total} gold item tasks made")
