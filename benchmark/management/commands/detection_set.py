"""`detection_set`: choose a detection benchmark's classes by the ILSVRC rules, merge fine classes into
basic-level ones, list (or start) the boxes a merge still owes, and freeze the set."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from benchmark import detection_sets
from benchmark.class_selection import DEFAULT_MAX_AREA_SHARE
from benchmark.models import DetectionSet
from benchmark.services import BenchmarkError


class Command(BaseCommand):
    help = (
        "Create (or replace, while unfrozen) a detection set from --classes: refused if one class is an "
        "ancestor of another; classes whose objects average more than --max-area-share of the image are "
        "dropped. --merge exports every dataset class below a named class as it (dog breeds as dog). Prints "
        "the JSON report. Without --classes, --name reports on an existing set; --stats prints per-class "
        "statistics of the whole dataset."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, metavar="NAME")
        parser.add_argument("--name", metavar="SET", help="The detection set's name.")
        parser.add_argument("--classes", metavar="WNID,WNID", help="Comma-separated wnids of the classes.")
        parser.add_argument(
            "--merge", action="store_true", help="Merge dataset classes below each named class."
        )
        parser.add_argument("--max-area-share", type=float, default=DEFAULT_MAX_AREA_SHARE)
        parser.add_argument("--no-area-rule", action="store_true", help="Keep classes whatever their size.")
        parser.add_argument("--min-instances", type=int, default=0)
        parser.add_argument("--todo", action="store_true", help="List the (image, class) pairs a merge owes.")
        parser.add_argument("--todo-jobs", action="store_true", help="Start box jobs for the owed pairs.")
        parser.add_argument(
            "--freeze", action="store_true", help="Freeze on the latest frozen split version."
        )
        parser.add_argument("--stats", action="store_true", help="Per-class statistics of the dataset.")

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {options['dataset']!r}")
        if options["stats"]:
            self.stdout.write(json.dumps(detection_sets.class_statistics(dataset), indent=1))
            return
        name = options["name"]
        if not name:
            raise CommandError("--name is required (or --stats)")
        try:
            if options["classes"] is not None:
                wnids = [w.strip() for w in options["classes"].split(",") if w.strip()]
                detection_set = detection_sets.detection_set_create(
                    dataset=dataset,
                    user=None,
                    name=name,
                    wnids=wnids,
                    merge=options["merge"],
                    max_area_share=None if options["no_area_rule"] else options["max_area_share"],
                    min_instances=options["min_instances"],
                )
            else:
                detection_set = DetectionSet.objects.filter(dataset=dataset, name=name).first()
                if detection_set is None:
                    raise CommandError(
                        f"dataset {dataset.name} has no detection set {name!r}; give --classes"
                    )
            out = {"name": detection_set.name, "classes": detection_set.classes, **detection_set.report}
            if options["todo"]:
                out["todo"] = [t.as_dict() for t in detection_sets.merge_todo(detection_set)]
            if options["todo_jobs"]:
                out["todo_jobs"] = detection_sets.merge_todo_jobs(detection_set=detection_set, user=None)
            if options["freeze"]:
                detection_set = detection_sets.detection_set_freeze(detection_set=detection_set, user=None)
                out["frozen"] = {
                    "split_version": detection_set.split_version.number,
                    "blacklisted": len(detection_set.snapshot["blacklist"]),
                    "attributed_boxes": len(detection_set.snapshot["box_attributes"]),
                    "negatives": {
                        s: {k: v for k, v in n.items() if k != "images"}
                        for s, n in detection_set.snapshot["negatives"].items()
                    },
                }
        except BenchmarkError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(json.dumps(out, indent=1))
