"""ILSVRC layout: ``classes.txt`` (id, wnid, name), ``Data/{split}/``, per-image detection XML with wnids as
object names (``Annotations/{split}/``), ``ImageSets/{split}.txt``, per-class DET lists
``ImageSets/DET/{split}_{wnid}.txt`` listing every image of the split (1 verified positive with boxes, -1
verified negative, 0 neither: a partial positive or a pair nobody decided), the blacklist ``ImageSets/DET/{split}_blacklist.txt`` (partial positives and reviewers' flags), the negative
images ``ImageSets/DET/{split}_negative_images.txt`` (verified absent for every class) and
classification/localization truth
``CLS-LOC/{split}_labels.txt``.

Corners are 0-based inclusive pixel indices (xmin = round(x1), xmax = round(x2) - 1), read back with the
devkit's +1 (``pixel_inclusive``). A partial positive is an image verified to show the class where no
accepted box exists: ILSVRC DET §3.3 blacklists such images for that class so detections there are ignored.
"""

from __future__ import annotations

from contextlib import ExitStack

import numpy as np

from .base import ExportBox, ExportContext, HashingWriter
from .voc import LIST_FLUSH, annotation_xml

# An image's status in a class's DET list, as the index of its line's variant: "0" (not scored), "1", "-1".
NOT_SCORED, PRESENT, ABSENT = 0, 1, 2
SUFFIXES = (" 0\n", " 1\n", " -1\n")


def devkit_corners(box: ExportBox, width: int, height: int) -> tuple[int, int, int, int]:
    xmin = min(max(round(box.x1), 0), width - 1)
    ymin = min(max(round(box.y1), 0), height - 1)
    xmax = min(max(round(box.x2) - 1, xmin), width - 1)
    ymax = min(max(round(box.y2) - 1, ymin), height - 1)
    return xmin, ymin, xmax, ymax


class DetLists:
    """The split's per-class DET lists, which name every image in every class's list (K lines per image: 80
    million at a million images of 80 classes). Written a batch of LIST_FLUSH images at a time: each image's
    status per class goes into a small matrix (only the classes it is present in or verified absent from are
    set), and each class's lines are picked from three prebuilt variants of the batch's lines (`stem 0`,
    `stem 1`, `stem -1`) by one numpy gather and joined, instead of a Python call per (image, class)."""

    def __init__(self, ctx: ExportContext, stack: ExitStack, paths: dict[int, str]):
        self._ctx, self._stack, self._paths = ctx, stack, paths
        self.row = {c: k for k, c in enumerate(paths)}  # a class's row, in the order of the classes
        self._status = np.zeros((len(paths), LIST_FLUSH), dtype=np.intp)
        self._stems: list[str] = []
        self._open: list[HashingWriter] = []

    def add(self, stem: str, present: set[int], absent: set[int]) -> None:
        column = len(self._stems)
        self._stems.append(stem)
        for c in present:
            self._status[self.row[c], column] = PRESENT
        for c in absent:
            self._status[self.row[c], column] = ABSENT
        if len(self._stems) == LIST_FLUSH:
            self.flush()

    def flush(self) -> None:
        n = len(self._stems)
        if not n or not self._paths:
            return
        if not self._open:
            self._open = [self._stack.enter_context(self._ctx.tree.open(p)) for p in self._paths.values()]
        variants = np.array([stem + suffix for suffix in SUFFIXES for stem in self._stems], dtype=object)
        at = np.arange(n)
        for row, writer in enumerate(self._open):
            writer.write("".join(variants[self._status[row, :n] * n + at].tolist()))
        self._status[:, :n] = NOT_SCORED
        self._stems.clear()


def export(ctx: ExportContext) -> None:
    wnid = {c.id: c.wnid for c in ctx.categories}
    every_class = frozenset(wnid)
    ctx.tree.write_text("classes.txt", "".join(f"{c.id} {c.wnid} {c.name}\n" for c in ctx.categories))
    for split in ctx.splits():
        labelled = ctx.labelled(split)
        with ExitStack() as stack:
            image_list = stack.enter_context(ctx.tree.open(f"ImageSets/{split}.txt"))
            if labelled:
                blacklist = stack.enter_context(ctx.tree.open(f"ImageSets/DET/{split}_blacklist.txt"))
                cls_loc = stack.enter_context(ctx.tree.open(f"CLS-LOC/{split}_labels.txt"))
                negative_list = stack.enter_context(
                    ctx.tree.open(f"ImageSets/DET/{split}_negative_images.txt")
                )
            lists = DetLists(ctx, stack, {c: f"ImageSets/DET/{split}_{w}.txt" for c, w in wnid.items()})
            batch: list[str] = []
            black: list[str] = []
            single: list[str] = []
            negative_images: list[str] = []
            for record in ctx.records(split):
                image = record.image
                stem = image.stem
                ctx.copy_image(f"Data/{split}/{image.file_name}", image)
                batch.append(f"{stem} {image.id}\n")
                if labelled:
                    objects = [(wnid[b.category_id], b) for b in record.boxes]
                    ctx.tree.write_text(
                        f"Annotations/{split}/{stem}.xml",
                        annotation_xml(ctx.source.dataset_name, split, image, objects, devkit_corners),
                    )
                    boxed = {b.category_id for b in record.boxes}
                    positives, negatives = record.positive_classes(), record.negative_classes()
                    # A negative image (ILSVRC §3.3.3) is verified absent for every class of the export: the
                    # re-verification a detection set needs before an image is used as a pure negative.
                    if wnid and negatives >= every_class and not record.blacklisted:
                        negative_images.append(f"{stem} {image.id}\n")
                    # Every image in every class's list: 1 present with its boxes, -1 verified absent, 0 not
                    # scored for that class (a partial positive, also blacklisted, or never decided). A pair
                    # flagged too ambiguous to localize is not scored, detections there ignored, and so is a
                    # partial positive (shown, no box): both go on the blacklist, in the order of the classes.
                    flagged = (record.blacklisted | (positives - boxed - negatives)) & every_class
                    for c in sorted(flagged, key=lists.row.__getitem__):
                        black.append(f"{image.id} {wnid[c]}\n")
                    lists.add(
                        stem,
                        (boxed - record.blacklisted) & every_class,
                        (negatives - record.blacklisted) & every_class,
                    )
                    # Classification truth is one class per image (ILSVRC §4.1): images showing one class.
                    if len(positives) == 1 and not record.blacklisted:
                        single.append(f"{image.id} {next(iter(positives))}\n")
                ctx.image_done()
                if len(batch) >= LIST_FLUSH:
                    image_list.write("".join(batch))
                    batch.clear()
                    if labelled:
                        blacklist.write("".join(black))
                        cls_loc.write("".join(single))
                        negative_list.write("".join(negative_images))
                        black.clear()
                        single.clear()
                        negative_images.clear()
            image_list.write("".join(batch))
            if labelled:
                blacklist.write("".join(black))
                cls_loc.write("".join(single))
                negative_list.write("".join(negative_images))
            lists.flush()
