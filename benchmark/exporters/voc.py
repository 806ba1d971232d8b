"""PASCAL VOC layout: ``Annotations/{id}.xml`` per image, ``JPEGImages/``, ``ImageSets/Main/{split}.txt`` and
per-class ``ImageSets/Main/{class}_{split}.txt`` lists, ``classes.txt`` (id, VOC name, wnid) and the
``labelmap.txt`` that CVAT and datumaro read classes from.

Corners follow the VOC devkit: 1-based inclusive pixel indices, so a continuous box [x1, x2) becomes
xmin = round(x1) + 1, xmax = round(x2) and spans xmax - xmin + 1 = round(x2) - round(x1) pixels.
"""

from __future__ import annotations

from contextlib import ExitStack
from functools import lru_cache
from xml.sax.saxutils import escape

from .base import ExportBox, ExportCategory, ExportContext, ExportImage, HashingWriter, ImageRecord

LIST_FLUSH = 2000

# Class names, the dataset's and the folder's name repeat on every image: each escaped once.
_escaped = lru_cache(maxsize=4096)(escape)


def devkit_corners(box: ExportBox, width: int, height: int) -> tuple[int, int, int, int]:
    xmin = min(max(round(box.x1) + 1, 1), width)
    ymin = min(max(round(box.y1) + 1, 1), height)
    xmax = min(max(round(box.x2), xmin), width)
    ymax = min(max(round(box.y2), ymin), height)
    return xmin, ymin, xmax, ymax


def truncated(box: ExportBox, width: int, height: int) -> int:
    # A reviewer's (or the attribute task's) word decides; without one, a box touching the image border is the
    # best evidence we have that the object continues outside the frame (VOC's "truncated").
    if box.truncated is not None:
        return int(box.truncated)
    return int(box.x1 <= 0.5 or box.y1 <= 0.5 or box.x2 >= width - 0.5 or box.y2 >= height - 0.5)


def _object_xml(name: str, box: ExportBox, image: ExportImage, corners) -> str:
    xmin, ymin, xmax, ymax = corners(box, image.width, image.height)
    # The fine label of a merged class rides along as a CVAT/datumaro-style attribute.
    extra = (
        f"<attributes><attribute><name>fine_label</name><value>{escape(box.fine)}</value></attribute>"
        "</attributes>"
        if box.fine
        else ""
    )
    return (
        f"  <object><name>{_escaped(name)}</name><pose>{_escaped(box.viewpoint.capitalize())}</pose>"
        f"<truncated>{truncated(box, image.width, image.height)}</truncated>"
        f"<occluded>{int(box.occluded)}</occluded><difficult>{int(box.difficult)}</difficult>"
        f"<bndbox><xmin>{xmin}</xmin><ymin>{ymin}</ymin><xmax>{xmax}</xmax><ymax>{ymax}</ymax></bndbox>"
        f"{extra}</object>\n"
    )


def annotation_xml(
    dataset: str,
    folder: str,
    image: ExportImage,
    objects: list[tuple[str, ExportBox]],
    corners=devkit_corners,
) -> str:
    parts = [
        "<annotation>\n",
        f"  <folder>{_escaped(folder)}</folder>\n",
        f"  <filename>{escape(image.file_name)}</filename>\n",
        f"  <source><database>{_escaped(dataset)}</database></source>\n",
        f"  <size><width>{image.width}</width><height>{image.height}</height><depth>3</depth></size>\n",
        "  <segmented>0</segmented>\n",
    ]
    for name, box in objects:
        parts.append(_object_xml(name, box, image, corners))
    parts.append("</annotation>\n")
    return "".join(parts)


class ClassLists:
    """Per-class image lists (``{prefix}{class}_{split}.txt``), opened lazily and written in batches."""

    def __init__(self, ctx: ExportContext, stack: ExitStack, path_of):
        self._ctx, self._stack, self._path_of = ctx, stack, path_of
        self._open: dict[int, HashingWriter] = {}
        self._pending: dict[int, list[str]] = {}

    def add(self, category_id: int, line: str) -> None:
        pending = self._pending.setdefault(category_id, [])
        pending.append(line)
        if len(pending) >= LIST_FLUSH:
            self._flush(category_id)

    def _flush(self, category_id: int) -> None:
        writer = self._open.get(category_id)
        if writer is None:
            writer = self._stack.enter_context(self._ctx.tree.open(self._path_of(category_id)))
            self._open[category_id] = writer
        writer.write("".join(self._pending[category_id]))
        self._pending[category_id] = []

    def close(self) -> None:
        for category_id in list(self._pending):
            if self._pending[category_id]:
                self._flush(category_id)


def classes_txt(categories: list[ExportCategory]) -> str:
    return "".join(f"{c.id} {c.slug} {c.wnid}\n" for c in categories)


def export(ctx: ExportContext) -> None:
    slug = {c.id: c.slug for c in ctx.categories}
    ctx.tree.write_text("classes.txt", classes_txt(ctx.categories))
    # The VOC devkit's class list is fixed; tools that read other classes (CVAT, datumaro) take them from a
    # label map: ``name:color:parts:actions`` per line, colours left to the reader.
    ctx.tree.write_text(
        "labelmap.txt",
        "# label:color_rgb:parts:actions\nbackground:0,0,0::\n"
        + "".join(f"{c.slug}:::\n" for c in ctx.categories),
    )
    for split in ctx.splits():
        labelled = ctx.labelled(split)
        with ExitStack() as stack:
            split_list = stack.enter_context(ctx.tree.open(f"ImageSets/Main/{split}.txt"))
            lists = ClassLists(ctx, stack, lambda c, s=split: f"ImageSets/Main/{slug[c]}_{s}.txt")
            batch: list[str] = []
            for record in ctx.records(split):
                _write_image(ctx, record, slug, lists if labelled else None)
                batch.append(record.image.stem + "\n")
                if len(batch) >= LIST_FLUSH:
                    split_list.write("".join(batch))
                    batch.clear()
            split_list.write("".join(batch))
            lists.close()


def _write_image(ctx: ExportContext, record: ImageRecord, slug: dict[int, str], lists: ClassLists | None):
    image = record.image
    objects = [(slug[b.category_id], b) for b in record.boxes]
    ctx.tree.write_text(
        f"Annotations/{image.stem}.xml", annotation_xml(ctx.source.dataset_name, "VOC", image, objects)
    )
    ctx.copy_image(f"JPEGImages/{image.file_name}", image)
    if lists is not None:
        # Only verified verdicts are listed: 1 present, -1 verified absent (VOC's lists are exhaustive; ours
        # say nothing about classes nobody asked about); a blacklisted pair is 0, VOC's "not scored".
        for c in sorted(record.positive_classes()):
            lists.add(c, f"{image.stem}  {0 if c in record.blacklisted else 1}\n")
        for c in sorted(record.negative_classes()):
            lists.add(c, f"{image.stem} -1\n")
    ctx.image_done()
