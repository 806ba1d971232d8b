"""YOLO layout: ``images/{split}/``, ``labels/{split}/{id}.txt`` with ``class cx cy w h`` normalized to the
image size, and ``data.yaml`` naming the classes (class index = position in the category list).
"""

from __future__ import annotations

import json

from .base import ExportContext


def data_yaml(ctx: ExportContext, splits: list[str]) -> str:
    # No ``path`` key: Ultralytics (``check_det_dataset``) then takes the folder of this file as the dataset
    # root, while a relative ``path`` such as "." would be read from the trainer's working directory.
    lines = ["# YOLO dataset description: the split folders are relative to this file's folder"]
    for split in splits:
        lines.append(f"{split}: images/{split}")
    # Ultralytics refuses a file without both `train` and `val`. An export without those splits (no split
    # version: one `all` folder; or one split chosen) names what it has: `train` is every labelled folder
    # written, `val` the same folders; a withheld split's images have no labels and train nothing.
    stand_in = [f"images/{s}" for s in splits if ctx.labelled(s)] or [f"images/{s}" for s in splits]
    missing = [key for key in ("train", "val") if key not in splits]
    if missing:
        value = stand_in[0] if len(stand_in) == 1 else "[" + ", ".join(stand_in) + "]"
        lines.append(f"# no {' or '.join(missing)} split in this export: the folders written stand in")
        for key in missing:
            lines.append(f"{key}: {value}")
    lines.append(f"nc: {len(ctx.categories)}")
    # JSON strings are valid YAML scalars and survive names with colons or quotes.
    lines.append("names: [" + ", ".join(json.dumps(c.name) for c in ctx.categories) + "]")
    lines.append("wnids: [" + ", ".join(json.dumps(c.wnid) for c in ctx.categories) + "]")
    return "\n".join(lines) + "\n"


def export(ctx: ExportContext) -> None:
    index = {c.id: k for k, c in enumerate(ctx.categories)}
    splits = ctx.splits()
    ctx.tree.write_text("data.yaml", data_yaml(ctx, splits))
    for split in splits:
        labelled = ctx.labelled(split)
        for record in ctx.records(split):
            image = record.image
            ctx.copy_image(f"images/{split}/{image.file_name}", image)
            if labelled:
                w, h = float(image.width), float(image.height)
                rows = [
                    f"{index[b.category_id]} {(b.x1 + b.x2) / 2 / w:.6f} {(b.y1 + b.y2) / 2 / h:.6f} "
                    f"{(b.x2 - b.x1) / w:.6f} {(b.y2 - b.y1) / h:.6f}\n"
                    for b in record.boxes
                ]
                # An empty file marks a background image (YOLO trainers read a missing file the same way).
                ctx.tree.write_text(f"labels/{split}/{image.stem}.txt", "".join(rows))
            ctx.image_done()
