"""Exporters by format name: adding a format is adding a module and registering it here.

``export_dataset`` writes one export (directory or archive) and, when a split's labels are withheld, the
hidden ground truth of that split beside it (never inside) for the evaluation server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import coco, ilsvrc, imagefolder, voc, yolo
from .archive import output_tree
from .base import (
    ExportContext,
    Exporter,
    ExportOptions,
    LabelSource,
    hidden_truth_path,
    manifest_summary,
    utcnow,
    write_blacklist,
    write_provenance,
)
from .file_names import FILE_NAMES
from .listing import inline_listings, write_manifest

EXPORTERS: dict[str, Exporter] = {
    "coco": coco.export,
    "voc": voc.export,
    "ilsvrc": ilsvrc.export,
    "yolo": yolo.export,
    "imagefolder": imagefolder.export,
}
FORMATS = tuple(EXPORTERS)
# Formats that can call images by their upload names: COCO names each image once, in its JSON.
ORIGINAL_NAME_FORMATS = ("coco",)


def export(source: LabelSource, format_name: str, out: Path, options: ExportOptions) -> dict[str, Any]:
    """Write one export of ``source`` to ``out`` (a directory, or an archive by suffix); return its manifest
    (its listings of files and images inline only while short: `listing.inline_listings`)."""
    try:
        exporter = EXPORTERS[format_name]
    except KeyError:
        raise ValueError(f"unknown format {format_name!r}; choose from {', '.join(FORMATS)}") from None
    if options.file_names not in FILE_NAMES:
        raise ValueError(f"unknown file names {options.file_names!r}; choose from {', '.join(FILE_NAMES)}")
    if options.file_names == "original" and format_name not in ORIGINAL_NAME_FORMATS:
        raise ValueError(
            f"original file names are offered for {', '.join(ORIGINAL_NAME_FORMATS)} only: {format_name} "
            "derives its per-image files from the image names, which uploads do not keep unique"
        )
    exported_at = utcnow()
    with output_tree(Path(out)) as tree:
        ctx = ExportContext(source, options, tree, exported_at)
        try:
            exporter(ctx)
            write_blacklist(ctx)
            if options.provenance:
                write_provenance(ctx)
            summary = manifest_summary(ctx, format_name, exported_at)
            with tree.open_unlisted("manifest.json") as manifest_file:
                write_manifest(manifest_file, summary, tree.files, ctx.image_list)
            manifest = inline_listings(summary, tree.files, ctx.image_list)
        finally:
            ctx.image_list.close()
    return manifest


def export_dataset(
    source: LabelSource, format_name: str, out: Path, options: ExportOptions
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The export, plus the hidden ground truth of every withheld split it covers (labels, no images),
    written to ``hidden_truth_path(out)``. Returns (manifest, hidden manifest or None)."""
    manifest = export(source, format_name, out, options)
    withheld = manifest["labels_withheld"]
    hidden = None
    if withheld:
        hidden_options = ExportOptions(
            split=withheld[0] if len(withheld) == 1 else options.split,
            include_images=False,
            provenance=options.provenance,
            withheld=frozenset(),
            file_names=options.file_names,
        )
        hidden = export(source, format_name, hidden_truth_path(Path(out)), hidden_options)
    return manifest, hidden


__all__ = [
    "EXPORTERS",
    "FILE_NAMES",
    "FORMATS",
    "ORIGINAL_NAME_FORMATS",
    "ExportOptions",
    "LabelSource",
    "export",
    "export_dataset",
]
