"""Image-folder layout for classification (ILSVRC §4.1: one label per image), one class list for every split:

- ``synsets.txt``: one wnid a line, sorted; line k is class index k in every split. Sorted wnids are the order
  torchvision's ``ImageFolder`` gives the class folders, and ILSVRC's own class order.
- ``images/{split}/{wnid}/{file}`` for the images showing exactly one class, with a folder for every class in
  every labelled split (empty when the split has no image of it), so a folder reader numbers every split alike;
  ``images/{split}/{file}`` flat for a withheld split.
- ``{split}.txt``: ``{split}/{wnid}/{file} {index}`` per image, paths relative to ``images/`` (withheld: the
  path alone). With ``synsets.txt`` this is the ImageNet list layout that datumaro reads as ``imagenet_txt``, so
  no other ``.txt`` file sits at the top.
- ``classes.tsv``: index, category id, wnid and name of every class.
"""

from __future__ import annotations

from .base import ExportCategory, ExportContext
from .voc import LIST_FLUSH


def class_order(categories: list[ExportCategory]) -> list[ExportCategory]:
    """The classes by wnid: the index of a class is its position here."""
    return sorted(categories, key=lambda c: c.wnid)


def export(ctx: ExportContext) -> None:
    ordered = class_order(ctx.categories)
    index = {c.id: k for k, c in enumerate(ordered)}
    wnid = {c.id: c.wnid for c in ordered}
    ctx.tree.write_text("synsets.txt", "".join(f"{c.wnid}\n" for c in ordered))
    ctx.tree.write_text(
        "classes.tsv",
        "index\tid\twnid\tname\n"
        + "".join(f"{k}\t{c.id}\t{c.wnid}\t{c.name}\n" for k, c in enumerate(ordered)),
    )
    for split in ctx.splits():
        labelled = ctx.labelled(split)
        if labelled:
            for c in ordered:
                ctx.tree.make_dir(f"images/{split}/{c.wnid}")
        with ctx.tree.open(f"{split}.txt") as listing:
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
                    line = f"{path} {index[category]}\n"
                else:
                    path = f"{split}/{image.file_name}"
                    line = f"{path}\n"
                ctx.copy_image(f"images/{path}", image)
                batch.append(line)
                ctx.image_done()
                if len(batch) >= LIST_FLUSH:
                    listing.write("".join(batch))
                    batch.clear()
            listing.write("".join(batch))
