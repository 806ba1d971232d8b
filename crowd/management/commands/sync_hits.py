"""`manage.py sync_hits`: settle submitted MTurk assignments (approve, reject only on gold, bonus), and with
`--dispose-finished` end the HITs of finished work. The same work the periodic Celery task
`crowd.mturk.hits_sync` does; safe to run alongside it."""

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
        parser.add_argument(
            "--dispose",
            action="store_true",
            help="After syncing, expire the dataset's HITs and delete those MTurk releases (needs --dataset).",
        )
        parser.add_argument(
            "--dispose-finished",
            action="store_true",
            help="After syncing, expire and delete the HITs of every dataset and kind whose tasks are all done.",
        )

    def handle(self, *args, **options):
        dataset_id = None
        if options["dispose"] and not options["dataset"]:
            raise CommandError("--dispose needs --dataset: it ends that dataset's HITs")
        if options["dataset"]:
            dataset = Dataset.objects.filter(name=options["dataset"]).first()
            if dataset is None:
                raise CommandError(f"no dataset named {options['dataset']!r}")
            dataset_id = dataset.pk
        try:
            client = mturk.client()
            body = asdict(mturk_sync.hits_sync(client, dataset_id=dataset_id))
            disposed = None
            if options["dispose"]:
                disposed = mturk_sync.hits_dispose(client, dataset_id=dataset_id)
            elif options["dispose_finished"]:
                disposed = mturk_sync.hits_dispose_finished(client)
            if disposed is not None:
                body |= {f"hits_{k}": v for k, v in asdict(disposed).items()}
        except Exception as exc:
            raise CommandError(f"sync stopped: {exc}; it is safe to run again") from exc
        self.stdout.write(json.dumps(body, indent=2))
