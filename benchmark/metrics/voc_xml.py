"""Reading PASCAL VOC annotation XML (one file per image) into GroundTruth, with the devkit's pixel convention.

VOC corners are inclusive 1-based pixel indices: a box from xmin to xmax spans ``xmax - xmin + 1`` pixels. We
store ``[xmin, ymin, xmax - xmin, ymax - ymin]`` and set ``pixel_inclusive`` so overlaps add the pixel back.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from .data import GroundTruth


def read_voc_xml(
    documents: Iterable[tuple[int, str | bytes]],
    class_names: Sequence[str],
    pixel_inclusive: bool = True,
) -> GroundTruth:
    """``documents`` yields (image id, XML text). Class ids are positions in ``class_names`` plus one.

    ``pixel_inclusive=False`` reads the same corners as continuous coordinates (no +1), for XML written by
    tools that store continuous boxes.
    """
    cat_of: Mapping[str, int] = {name: k + 1 for k, name in enumerate(class_names)}
    image_ids: list[int] = []
    sizes: dict[int, tuple[float, float]] = {}
    rows: list[tuple[int, int, float, float, float, float, bool]] = []
    for image_id, text in documents:
        root = ET.fromstring(text)
        image_ids.append(image_id)
        size = root.find("size")
        if size is not None and size.findtext("width") and size.findtext("height"):
            sizes[image_id] = (float(size.findtext("width", "0")), float(size.findtext("height", "0")))
        for obj in root.iter("object"):
            name = (obj.findtext("name") or "").strip()
            if name not in cat_of:
                raise ValueError(f"image {image_id}: unknown class {name!r}")
            box = obj.find("bndbox")
            if box is None:
                raise ValueError(f"image {image_id}: object {name!r} has no bndbox")
            x1, y1, x2, y2 = (float(box.findtext(k, "nan")) for k in ("xmin", "ymin", "xmax", "ymax"))
            difficult = (obj.findtext("difficult") or "0").strip() == "1"
            rows.append((image_id, cat_of[name], x1, y1, x2 - x1, y2 - y1, difficult))
    arr = np.array([r[:6] for r in rows], dtype=np.float64).reshape(-1, 6)
    return GroundTruth(
        image_ids=np.array(image_ids, dtype=np.int64),
        category_ids=np.arange(1, len(class_names) + 1),
        box_image=arr[:, 0].astype(np.int64),
        box_category=arr[:, 1].astype(np.int64),
        boxes=arr[:, 2:6],
        difficult=np.array([r[6] for r in rows], dtype=bool),
        category_names={k + 1: name for k, name in enumerate(class_names)},
        image_sizes=sizes or None,
        pixel_inclusive=pixel_inclusive,
    )
