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

from .base import ExportBox, ExportContext
from .voc import LIST_FLUSH, ClassLists, annotation_xml


def devkit_corners(box: ExportBox, width: int, height: int) -> tuple[int, int, int, int]:
    xmin = min(max(round(box.x1), 0), width - 1)
    ymin = min(max(round(box.y1), 0), height - 1)
    xmax = min(max(round(box.x2) - 1, xmin), width - 1)
    ymax = min(max(round(box.y2) - 1, ymin), height - 1)
    return xmin, ymin, xmax, ymax


def export(ctx: ExportContext) -> None:
    wnid = {c.id: c.wnid for c in ctx.categories}
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
            lists = ClassLists(ctx, stack, lambda c, s=split: f"ImageSets/DET/{s}_{wnid[c]}.txt")
            batch: list[str] = []
            black: list[str] = []
            single: list[str] = []
            negative_images: list[str] = []
            for record in ctx.records(split):
                image = record.image
                ctx.copy_image(f"Data/{split}/{image.file_name}", image)
                batch.append(f"{image.stem} {image.id}\n")
                if labelled:
                    objects = [(wnid[b.category_id], b) for b in record.boxes]
                    ctx.tree.write_text(
                        f"Annotations/{split}/{image.stem}.xml",
                        annotation_xml(ctx.source.dataset_name, split, image, objects, devkit_corners),
                    )
                    boxed = {b.category_id for b in record.boxes}
                    positives, negatives = record.positive_classes(), record.negative_classes()
                    # A negative image (ILSVRC §3.3.3) is verified absent for every class of the export: the
                    # re-verification a detection set needs before an image is used as a pure negative.
                    if wnid and negatives >= set(wnid) and not record.blacklisted:
                        negative_images.append(f"{image.stem} {image.id}\n")
                    # Every image in every class's list: 1 present with its boxes, -1 verified absent, 0 not
                    # scored for that class (a partial positive, also blacklisted, or never decided).
                    for c in wnid:
                        if c in record.blacklisted:
                            # Flagged too ambiguous to localize: not scored, detections there ignored.
                            lists.add(c, f"{image.stem} 0\n")
                            black.append(f"{image.id} {wnid[c]}\n")
                        elif c in boxed:
                            lists.add(c, f"{image.stem} 1\n")
                        elif c in negatives:
                            lists.add(c, f"{image.stem} -1\n")
                        else:
                            lists.add(c, f"{image.stem} 0\n")
                            if c in positives:
                                black.append(f"{image.id} {wnid[c]}\n")
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
            lists.close()
