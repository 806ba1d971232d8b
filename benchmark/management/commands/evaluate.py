"""`evaluate`: score a submission file against ground truth with one protocol; prints one JSON object."""

from __future__ import annotations

import json
import math
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmark.metrics import PROTOCOLS, SubmissionError
from benchmark.metrics.files import TruthError, evaluate_files, load_ground_truth, load_predictions


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


class Command(BaseCommand):
    help = (
        "Score predictions. --gt is a COCO annotation JSON, or a COCO/VOC/ILSVRC export (folder or archive) "
        "as `export` writes it; --pred a COCO results JSON (against COCO truth) or ILSVRC text lines. "
        "Prints one JSON object; a malformed submission exits non-zero listing every problem."
    )

    def add_arguments(self, parser):
        parser.add_argument("--protocol", required=True, choices=sorted(PROTOCOLS))
        parser.add_argument("--gt", required=True, metavar="FILE")
        parser.add_argument("--pred", required=True, metavar="FILE")
        parser.add_argument("--split", help="Which split of an export folder holding several.")
        parser.add_argument(
            "--bootstrap", type=int, default=0, metavar="N", help="Bootstrap samples (ILSVRC §6.2)."
        )
        parser.add_argument("--seed", type=int, default=0, help="Bootstrap seed.")

    def handle(self, *args, **options):
        protocol = options["protocol"]
        try:
            gt = load_ground_truth(protocol, Path(options["gt"]), options["split"])
        except TruthError as exc:
            raise CommandError(f"--gt: {exc}") from None
        pred_path = Path(options["pred"])
        if not pred_path.is_file():
            raise CommandError(f"--pred: {pred_path} is not a file")
        try:
            pred = load_predictions(protocol, pred_path.read_bytes(), gt)
        except SubmissionError as exc:
            for problem in exc.problems:
                self.stderr.write(f"{pred_path.name}: {problem}")
            raise CommandError(
                f"{len(exc.problems)} problem(s) in {pred_path.name}; nothing was scored"
            ) from None
        if options["bootstrap"] < 0:
            raise CommandError("--bootstrap must be >= 0")
        result = evaluate_files(protocol, gt, pred, options["bootstrap"], options["seed"])
        if getattr(pred, "boxes", None) is not None:
            # Boxes are scored as submitted, as pycocotools and the devkits score them; say how many reach past
            # the image's border (and how many lie wholly outside it), so a coordinate mix-up shows.
            result["boxes_past_border"] = pred.past_border
            result["boxes_outside_image"] = pred.outside
        self.stdout.write(json.dumps(_finite(result), sort_keys=True))
