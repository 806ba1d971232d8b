"""`manage.py sync_hits`: settle submitted MTurk assignments (approve, reject only on gold, bonus). The same
work the periodic Celery task `crowd.mturk.hits_sync` does; safe to run alongside it."""

from __future__ import annotations

import json
from dataclasses import asdict

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from crowd.providers import mturk, mturk_sync


class Command(BaseCommand):
    help = "Reconcile submitted MTurk assignments with our bundles and pay them by the gold app's decisions."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", help="Only this dataset's HITs (name).")

    def handle(self, *args, **options):
        dataset_id = None
        if options["dataset"]:
            dataset = Dataset.objects.filter(name=options["dataset"]).first()
            if dataset is None:
                raise CommandError(f"no dataset named {options['dataset']!r}")
            dataset_id = dataset.pk
        try:
            report = mturk_sync.hits_sync(mturk.client(), dataset_id=dataset_id)
        except Exception as exc:
            raise CommandError(f"sync stopped: {exc}; it is safe to run again") from exc
        self.stdout.write(json.dumps(asdict(report), indent=2))
