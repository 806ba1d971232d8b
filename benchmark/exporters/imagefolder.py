"""Image-folder layout for classification: ``{split}/{wnid}/{file}`` for images showing exactly one class
(ILSVRC §4.1: one label per image), a flat ``{split}/`` for withheld splits, ``{split}_files.txt`` listing
``relative/path category_id`` (category -1 when withheld) and ``classes.txt``.
"""

from __future__ import annotations

from .base import ExportContext
from .voc import LIST_FLUSH


def export(ctx: ExportContext) -> None:
    wnid = {c.id: c.wnid for c in ctx.categories}
    ctx.tree.write_text("classes.txt", "".join(f"{c.id} {c.wnid} {c.name}\n" for c in ctx.categories))
    for split in ctx.splits():
        labelled = ctx.labelled(split)
        with ctx.tree.open(f"{split}_files.txt") as listing:
            batch: list[str] = []
            for record in ctx.records(split):
                image = record.image
                if labelled:
                    positives = record.positive_classes()
                    if len(positives) != 1:
                        ctx.image_done()  # ambiguous for classification: several classes or none
                        continue
                    category = next(iter(positives))
                    path = f"{split}/{wnid[category]}/{image.file_name}"
                else:
                    category = -1
                    path = f"{split}/{image.file_name}"
                ctx.copy_image(path, image)
                batch.append(f"{path} {category}\n")
                ctx.image_done()
                if len(batch) >= LIST_FLUSH:
                    listing.write("".join(batch))
                    batch.clear()
            listing.write("".join(batch))
