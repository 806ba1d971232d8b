"""COCO detection JSON: ``annotations/instances_{split}.json`` (``image_info_{split}.json``, its annotation list
empty, when the split's labels are withheld) and ``images/{split}/``. Written incrementally, one pass over images
and one over boxes.
"""

from __future__ import annotations

import functools
import json

from .base import ExportBox, ExportContext, json_line_batches
from .listing import json_str
from .voc import truncated

INFO_VERSION = "1.0"


def _header(ctx: ExportContext, split: str) -> str:
    info = {
        "description": f"{ctx.source.dataset_name} ({split})",
        "version": ctx.source.dataset_version,
        "year": ctx.exported_at.year,
        "date_created": ctx.exported_at.isoformat(),
        "contributor": "Crowdlabel",
    }
    categories = [
        {"id": c.id, "name": c.name, "supercategory": c.supercategory or c.name, "wnid": c.wnid}
        for c in ctx.categories
    ]
    return (
        '{"info": '
        + json.dumps(info)
        + ', "licenses": [], "categories": '
        + json.dumps(categories)
        + ', "images": [\n'
    )


def export(ctx: ExportContext) -> None:
    for split in ctx.splits():
        labelled = ctx.labelled(split)
        name = f"annotations/instances_{split}.json" if labelled else f"annotations/image_info_{split}.json"
        with ctx.tree.open(name) as out:
            out.write(_header(ctx, split))
            for chunk in json_line_batches(_image_rows(ctx, split)):
                out.write(chunk)
            if not labelled:
                # An empty list rather than no key: datumaro's COCO reader requires the field, and the file's
                # name (COCO's image_info_*) is what says the labels were withheld.
                out.write('\n], "annotations": []}\n')
                continue
            out.write('\n], "annotations": [\n')
            for chunk in json_line_batches(_box_rows(ctx, split)):
                out.write(chunk)
            out.write("\n]}\n")


def _image_rows(ctx: ExportContext, split: str):
    for image in ctx.images(split):
        ctx.copy_image(f"images/{split}/{image.file_name}", image)
        ctx.image_done()
        yield (
            f'{{"id": {image.id}, "file_name": {json_str(image.file_name)}, '
            f'"width": {image.width}, "height": {image.height}}}'
        )


def _box_rows(ctx: ExportContext, split: str):
    # float repr is valid JSON and round-trips exactly, as json.dumps would write it. ``segmentation`` is
    # present and empty: datumaro warns when the field is missing, and reads a box-shaped polygon as a second
    # object beside the box; detectron2 and mmdetection skip an empty one. Blacklisted pairs are not written.
    for record in ctx.box_records(split):
        for b in record.boxes:
            w = b.x2 - b.x1
            h = b.y2 - b.y1
            yield (
                f'{{"id": {b.id}, "image_id": {b.image_id}, "category_id": {b.category_id}, '
                f'"bbox": [{b.x1!r}, {b.y1!r}, {w!r}, {h!r}], "area": {w * h!r}, "iscrowd": 0, '
                '"segmentation": [], '
                f'"attributes": {_attributes(b, record.image.width, record.image.height)}}}'
            )


def _attributes(b: ExportBox, width: int, height: int) -> str:
    """CVAT/datumaro-style per-annotation attributes: the VOC flags, and the fine label after a merge."""
    return _attributes_json(b.difficult, bool(truncated(b, width, height)), b.occluded, b.viewpoint, b.fine)


# A dataset's boxes share a handful of attribute combinations, so each is encoded once (a json.dumps per box was
# a fifth of a COCO export's time). typed: True and 1 are different keys, as json.dumps writes them differently.
@functools.lru_cache(maxsize=4096, typed=True)
def _attributes_json(difficult: bool, is_truncated: bool, occluded: bool, viewpoint: str, fine: str) -> str:
    attributes: dict[str, object] = {
        "difficult": difficult,
        "truncated": is_truncated,
        "occluded": occluded,
        "viewpoint": viewpoint,
    }
    if fine:
        attributes["fine_label"] = fine
    return json.dumps(attributes)
