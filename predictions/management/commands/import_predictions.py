"""`import_predictions --dataset NAME FILE [--name ...]`: import a model's predictions (COCO results JSON, or the
object form with image-level class scores) as one prediction set, or refuse the file naming every bad row."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from predictions import rows, services
from predictions.models import PredictionSource


class Command(BaseCommand):
    help = (
        "Import a model's predictions for a dataset: a COCO results JSON list ([{image_id or file_name, "
        "category_id or wnid, bbox: [x, y, w, h], score}, ...]) or an object with `detections` and "
        "`classifications` (image-level class scores). One bad row refuses the whole file, every problem is "
        "printed, and nothing is stored. Importing the same file again stores nothing twice. See "
        "docs/predictions.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", metavar="FILE")
        parser.add_argument("--dataset", required=True, metavar="NAME")
        parser.add_argument(
            "--name", default="", help="The prediction set's name (default: the file's name)."
        )
        parser.add_argument("--model", default="", help="The model's name.")
        parser.add_argument("--model-version", default="", help="The model's version.")
        parser.add_argument(
            "--user", default="", metavar="USERNAME", help="Record the import as this user's."
        )

    def handle(self, *args, **opts):
        dataset = Dataset.objects.filter(name=opts["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {opts['dataset']!r}")
        actor = None
        if opts["user"]:
            actor = get_user_model().objects.filter(username=opts["user"]).first()
            if actor is None:
                raise CommandError(f"no user named {opts['user']!r}")
        path = Path(opts["file"])
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        try:
            prediction_set, created = services.prediction_file_import(
                dataset=dataset,
                data=data,
                source=PredictionSource.COMMAND,
                actor=actor,
                name=opts["name"] or path.name,
                model_name=opts["model"],
                model_version=opts["model_version"],
            )
        except rows.PredictionsRefused as exc:
            raise CommandError(f"{path.name}: {exc}") from None
        if not created:
            self.stdout.write(
                f"{path.name} was imported before as prediction set {prediction_set.pk} "
                f"({prediction_set.name!r}); nothing stored"
            )
            return
        self.stdout.write(
            f"prediction set {prediction_set.pk} ({prediction_set.name!r}) in {dataset.name}: "
            f"{prediction_set.box_count} boxes, {prediction_set.score_count} class scores"
        )
