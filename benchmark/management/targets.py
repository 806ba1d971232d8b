"""What the export and statistics commands read: the dataset named by --dataset, with the optional
--split-version and --detection-set of it, each unknown one refused by name."""

from __future__ import annotations

from django.core.management.base import CommandError

from annotation.models import Dataset
from benchmark.models import DetectionSet, SplitVersion


def command_target(options) -> tuple[Dataset, SplitVersion | None, DetectionSet | None]:
    dataset = Dataset.objects.filter(name=options["dataset"]).first()
    if dataset is None:
        raise CommandError(f"no dataset named {options['dataset']!r}")
    version = None
    if options["split_version"] is not None:
        version = SplitVersion.objects.filter(dataset=dataset, number=options["split_version"]).first()
        if version is None:
            raise CommandError(f"dataset {dataset.name} has no split version {options['split_version']}")
    detection_set = None
    if options["detection_set"]:
        detection_set = DetectionSet.objects.filter(dataset=dataset, name=options["detection_set"]).first()
        if detection_set is None:
            raise CommandError(f"dataset {dataset.name} has no detection set {options['detection_set']!r}")
    return dataset, version, detection_set
