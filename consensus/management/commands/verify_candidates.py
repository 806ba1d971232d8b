"""`manage.py verify_candidates`: queue image verification of a dataset's candidates for one concept."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from consensus import verification
from hierarchy.models import Concept


class Command(BaseCommand):
    help = (
        "Queue 'does this image show CONCEPT?' questions for a dataset's candidate images, with a calibration "
        "subset when the concept has no table yet, then print progress (or only progress with --progress)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        parser.add_argument("--concept", required=True, help="wnid of the concept.")
        parser.add_argument(
            "--images", default="all", help="'all' (default) or comma-separated image ids of the dataset."
        )
        parser.add_argument(
            "--calibrate",
            choices=("auto", "yes", "no"),
            default="auto",
            help="Pick a calibration subset: auto = only when the concept has no table yet (default).",
        )
        parser.add_argument("--progress", action="store_true", help="Only print progress; queue nothing.")

    def handle(self, *args, **opts):
        dataset = Dataset.objects.filter(name=opts["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {opts['dataset']!r}")
        concept = Concept.objects.filter(wnid=opts["concept"]).first()
        if concept is None:
            raise CommandError(f"no concept with wnid {opts['concept']!r} (load the hierarchy first)")
        if not opts["progress"]:
            images = None
            if opts["images"] != "all":
                try:
                    ids = sorted({int(x) for x in opts["images"].split(",") if x.strip()})
                except ValueError:
                    raise CommandError("--images must be 'all' or comma-separated image ids") from None
                images = list(dataset.images.filter(pk__in=ids))
                missing = sorted(set(ids) - {i.pk for i in images})
                if missing:
                    raise CommandError(f"not images of dataset {dataset.name}: {missing}")
            calibrate = {"auto": None, "yes": True, "no": False}[opts["calibrate"]]
            plan = verification.verification_queue(
                dataset=dataset, concept=concept, images=images, calibrate=calibrate
            )
            reuse = " (reusing the concept's calibration table)" if plan.table_reused else ""
            origin = " from its candidate pool" if plan.from_pool else ""
            self.stdout.write(
                f"queued {plan.created} questions{origin} for {concept.wnid} ({concept.name}) in {dataset.name}: "
                f"{plan.calibration} calibration, {plan.waiting} waiting for the table{reuse}"
            )
        progress = verification.verification_progress(dataset=dataset, concept=concept)
        states = ", ".join(f"{n} {state}" for state, n in progress["by_state"].items() if n)
        self.stdout.write(
            f"progress: {progress['questions']} questions ({states or 'none'}); "
            f"{progress['votes']} votes so far"
        )
