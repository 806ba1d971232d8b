"""`export`: write a dataset in COCO, VOC, ILSVRC, YOLO or image-folder layout to a folder or archive."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from benchmark.exporters import FILE_NAMES, FORMATS
from benchmark.exporters.base import hidden_truth_path
from benchmark.management.targets import command_target
from benchmark.services import BenchmarkError, export_run


class Command(BaseCommand):
    help = (
        "Export the dataset's final labels (the overlap check catches up first). Images whose labelling is "
        "unfinished, gold images and unlabelled images are left out and listed in manifest.json with reasons. "
        "Test labels are withheld: exporting test (or all) writes test "
        "images and ids only, and the test labels go to OUT-test-groundtruth beside the export, for the "
        "evaluation server. OUT ending in .zip or .tar.gz is an archive, anything else a folder."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, metavar="NAME")
        parser.add_argument("--format", required=True, choices=FORMATS)
        parser.add_argument("--split", default="all", choices=("train", "val", "test", "all"))
        parser.add_argument("--out", required=True, metavar="DIR_OR_ARCHIVE")
        parser.add_argument("--no-images", action="store_true", help="Write labels and lists only.")
        parser.add_argument("--provenance", action="store_true", help="Add the per-label provenance sidecar.")
        parser.add_argument(
            "--include-provisional",
            action="store_true",
            help="Also write accepted boxes that are not final yet (overlap check pending, review item open); "
            "the manifest says so. Default: final labels only.",
        )
        parser.add_argument(
            "--split-version", type=int, help="Split version number (default: latest frozen)."
        )
        parser.add_argument(
            "--detection-set",
            metavar="NAME",
            help="Export only this detection set's classes (merged fine classes kept as box attributes).",
        )
        parser.add_argument(
            "--file-names",
            choices=FILE_NAMES,
            default="id",
            help="What the images are called inside the export: id (default) or original (COCO only: the "
            "names they were uploaded with; a shared name gets the image id added). The manifest maps both.",
        )
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, **options):
        dataset, version, detection_set = command_target(options)
        out = Path(options["out"])
        bar = tqdm(
            total=dataset.images.count(),
            unit="image",
            file=sys.stderr,
            disable=options["no_progress"] or not sys.stderr.isatty(),
        )

        def progress(done: int) -> None:
            bar.update(done - bar.n)

        try:
            manifest, hidden = export_run(
                dataset=dataset,
                format_name=options["format"],
                split=options["split"],
                out=out,
                include_images=not options["no_images"],
                provenance=options["provenance"],
                version=version,
                progress=progress,
                detection_set=detection_set,
                include_provisional=options["include_provisional"],
                file_names=options["file_names"],
            )
        except BenchmarkError as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        counts = manifest["counts"]
        self.stdout.write(
            f"wrote {out}: "
            + ", ".join(f"{s} {n} images" for s, n in counts["images"].items())
            + f", {sum(counts['boxes'].values())} boxes, {manifest['listed']['files']} files"
        )
        completeness = manifest["completeness"]
        not_final = sum(c["accepted_boxes_not_final"]["total"] for c in completeness["classes"].values())
        left_out = completeness["images_left_out"]
        self.stdout.write(
            f"labels: {completeness['labels']}; {left_out['total']} images left out"
            + (
                f" ({', '.join(f'{r} {n}' for r, n in left_out['by_reason'].items())})"
                if left_out["total"]
                else ""
            )
            + f"; {not_final} accepted boxes not final"
            + (" (written, provisional)" if completeness["labels"] == "provisional" and not_final else "")
        )
        if hidden is not None:
            self.stdout.write(
                f"withheld labels of {', '.join(manifest['labels_withheld'])} written to {hidden_truth_path(out)} "
                "(for the evaluation server only)"
            )
