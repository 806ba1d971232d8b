"""Reading the platform's exported files back (COCO and ILSVRC archives, as the export API serves them) and
scoring them against the simulator's ground truth: what a benchmark user would get, not what the database says.

Pure: takes archive bytes and ground-truth mappings, returns dataclasses; no Django import.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from simulator.ground_truth import COVERAGE_IOU, BoxArray, as_boxes, match_boxes

# COCO's "small" object: area under 32 x 32 pixels (the same line as simulator.simulated.SMALL_OBJECT_AREA).
SMALL_AREA = 32 * 32

Key = tuple[Hashable, str]  # (image id, class key)


@dataclass
class ExportedLabels:
    """What an export says: boxes per (image, class), image-level positives and verified negatives, the class
    keys (wnids) it lists as categories, and the image ids it holds."""

    boxes: dict[Key, list[list[float]]] = field(default_factory=dict)
    positives: set[Key] = field(default_factory=set)
    negatives: set[Key] = field(default_factory=set)
    categories: set[str] = field(default_factory=set)
    images: set[int] = field(default_factory=set)


def read_coco(archive: bytes) -> ExportedLabels:
    """Boxes and categories of a COCO export (`annotations/instances_{split}.json`, every split in it). An
    image with a box is a positive for the box's class; COCO has no verified negatives."""
    out = ExportedLabels()
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        for name in sorted(zf.namelist()):
            if not re.fullmatch(r"annotations/(instances|image_info)_[^/]+\.json", name):
                continue
            data = json.loads(zf.read(name))
            wnid = {c["id"]: c.get("wnid") or c["name"] for c in data.get("categories", [])}
            out.categories |= set(wnid.values())
            out.images |= {int(i["id"]) for i in data.get("images", [])}
            for a in data.get("annotations", []):
                x, y, w, h = (float(v) for v in a["bbox"])
                key = (int(a["image_id"]), wnid[a["category_id"]])
                out.boxes.setdefault(key, []).append([x, y, x + w, y + h])
                out.positives.add(key)
    return out


# Lists of ImageSets/DET that name no class: the blacklist (`image_id wnid`) and the images verified absent for
# every class (`stem image_id`, whose second column is not a label: read as one, it made every such image a
# positive of a class "negative_images", the soak's unexplained "1 positive only in the export").
NOT_CLASS_LISTS = ("blacklist", "negative_images")


def read_ilsvrc(archive: bytes) -> ExportedLabels:
    """Image-level labels of an ILSVRC export: `ImageSets/DET/{split}_{wnid}.txt` lines `stem label` with 1
    (positive with boxes) as positives, -1 as verified negatives and 0 as not scored for the class; a 0 that
    the blacklist `ImageSets/DET/{split}_blacklist.txt` names (`image_id wnid`: a partial positive, verified
    present but not fully boxed) is a positive too, while a 0 it does not name is a pair nobody decided (an
    image held out as gold, say) and no label at all. Stems are mapped to image ids through
    `ImageSets/{split}.txt`; categories from `classes.txt`."""
    out = ExportedLabels()
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        names = set(zf.namelist())
        if "classes.txt" in names:
            for line in zf.read("classes.txt").decode().splitlines():
                parts = line.split()
                if len(parts) >= 2:
                    out.categories.add(parts[1])
        stem_to_id: dict[str, int] = {}
        for name in sorted(names):
            if re.fullmatch(r"ImageSets/[^/]+\.txt", name):
                for line in zf.read(name).decode().splitlines():
                    stem, image_id = line.split()[:2]
                    stem_to_id[stem] = int(image_id)
        out.images = set(stem_to_id.values())
        partial: set[tuple[int, str]] = set()
        for name in sorted(names):
            if re.fullmatch(r"ImageSets/DET/[^/_]+_blacklist\.txt", name):
                for line in zf.read(name).decode().splitlines():
                    image_id, wnid = line.split()[:2]
                    partial.add((int(image_id), wnid))
        for name in sorted(names):
            match = re.fullmatch(r"ImageSets/DET/([^/_]+)_([^/]+)\.txt", name)
            if not match or match.group(2) in NOT_CLASS_LISTS:
                continue
            wnid = match.group(2)
            for line in zf.read(name).decode().splitlines():
                stem, label = line.split()[:2]
                key = (stem_to_id[stem], wnid)
                if int(label) > 0 or (int(label) == 0 and key in partial):
                    out.positives.add(key)
                elif int(label) < 0:
                    out.negatives.add(key)
    return out


@dataclass(frozen=True)
class InstanceScore:
    """Box figures of ILSVRC §3.2.1 at the instance level: coverage = true instances matched one-to-one by an
    exported box of their class at IoU >= 0.5 (small ones separately), precision = exported boxes so matched."""

    coverage: float | None
    small_coverage: float | None
    precision: float | None
    true_instances: int
    small_instances: int
    exported_boxes: int
    matched: int


def score_instances(
    truth: Mapping[Key, BoxArray],
    exported: Mapping[Key, BoxArray],
    iou_threshold: float = COVERAGE_IOU,
    small_area: float = SMALL_AREA,
) -> InstanceScore:
    n_true = n_small = n_matched = n_small_matched = n_exported = 0
    for key in set(truth) | set(exported):
        t = as_boxes(truth.get(key, ()))
        e = as_boxes(exported.get(key, ()))
        n_exported += e.shape[0]
        n_true += t.shape[0]
        small = (t[:, 2] - t[:, 0]) * (t[:, 3] - t[:, 1]) < small_area
        n_small += int(small.sum())
        if t.shape[0] == 0 or e.shape[0] == 0:
            continue
        matched = match_boxes(t, e, iou_threshold)
        taken = matched[matched >= 0]
        n_matched += taken.size
        n_small_matched += int(small[taken].sum())
    return InstanceScore(
        coverage=n_matched / n_true if n_true else None,
        small_coverage=n_small_matched / n_small if n_small else None,
        precision=n_matched / n_exported if n_exported else None,
        true_instances=n_true,
        small_instances=n_small,
        exported_boxes=n_exported,
        matched=n_matched,
    )


def truth_boxes(scenes: Mapping[int, Mapping[str, np.ndarray]]) -> dict[Key, np.ndarray]:
    """{image id: {class key: boxes}} flattened to {(image id, class key): boxes}."""
    return {(image_id, key): b for image_id, by_class in scenes.items() for key, b in by_class.items()}


def missing_categories(classes: Iterable[str], exported: ExportedLabels) -> list[str]:
    return sorted(set(classes) - exported.categories)
