"""Reading evaluation inputs from files: ground truth as exported (COCO JSON, a VOC or ILSVRC export folder
or archive) and submissions (COCO results JSON, ILSVRC text), then scoring them with any protocol.

The ``evaluate`` command and the evaluation endpoint both go through here, so a team scoring itself on val
gets exactly what the server computes on test.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from .bootstrap import bootstrap
from .coco import ground_truth_from_coco
from .data import Detections, GroundTruth, ImageLabels, TopKPredictions
from .registry import DETECTION_PROTOCOLS, LABEL_PROTOCOLS, PROTOCOLS
from .submissions import (
    Problem,
    SubmissionError,
    parse_coco_results,
    read_ilsvrc_cls,
    read_ilsvrc_det,
    read_ilsvrc_loc,
)
from .voc_xml import read_voc_xml

ARCHIVES = (".zip", ".tar.gz", ".tgz")
Truth = GroundTruth | ImageLabels
Prediction = Detections | TopKPredictions


class TruthError(ValueError):
    """The ground-truth file cannot be read as the protocol needs."""


def _is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVES)


@contextmanager
def _as_directory(path: Path) -> Iterator[Path]:
    if not _is_archive(path):
        yield path
        return
    scratch = Path(tempfile.mkdtemp(prefix="truth-"))
    try:
        shutil.unpack_archive(
            str(path), str(scratch), "zip" if path.name.lower().endswith(".zip") else "gztar"
        )
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _classes(path: Path) -> list[tuple[int, str, str]]:
    """``classes.txt`` of our VOC (id, name, wnid) and ILSVRC (id, wnid, name) exports, as (id, 2nd, 3rd)."""
    if not path.exists():
        raise TruthError(f"{path.name} is missing: not an export folder")
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        fields = line.split(maxsplit=2)
        if not fields:
            continue
        if len(fields) < 2 or not fields[0].lstrip("-").isdigit():
            raise TruthError(f"{path.name} line {number}: expected 'id name ...', got {line!r}")
        rows.append((int(fields[0]), fields[1], fields[2] if len(fields) > 2 else fields[1]))
    return rows


def _pick_split(candidates: list[str], split: str | None, what: str) -> str:
    if split is not None:
        if split not in candidates:
            raise TruthError(f"no {what} for split {split!r} (found: {', '.join(candidates) or 'none'})")
        return split
    if len(candidates) != 1:
        raise TruthError(f"{what} found for splits {candidates}: choose one with --split")
    return candidates[0]


def _remap(gt: GroundTruth, ids: list[int], names: dict[int, str]) -> GroundTruth:
    """read_voc_xml numbers classes by position; our exports use stable concept ids."""
    table = np.asarray(ids, dtype=np.int64)
    return replace(
        gt,
        category_ids=table,
        box_category=table[gt.box_category - 1] if gt.n_boxes else gt.box_category,
        category_names=names,
    )


def _xml_truth(
    xml_dir: Path, stems: list[str], class_names: list[str], ids: list[int], names: dict[int, str]
) -> GroundTruth:
    documents = ((int(stem), (xml_dir / f"{stem}.xml").read_bytes()) for stem in stems)
    try:
        gt = read_voc_xml(documents, class_names, pixel_inclusive=True)
    except (ValueError, OSError) as exc:
        raise TruthError(f"cannot read the annotation XML: {exc}") from None
    return _remap(gt, ids, names)


def _voc_truth(root: Path, split: str | None) -> GroundTruth:
    classes = _classes(root / "classes.txt")
    lists = root / "ImageSets" / "Main"
    splits = sorted(p.stem for p in lists.glob("*.txt") if "_" not in p.stem) if lists.is_dir() else []
    chosen = _pick_split(splits, split, "VOC image lists")
    stems = (lists / f"{chosen}.txt").read_text().split()
    return _xml_truth(
        root / "Annotations",
        stems,
        [name for _, name, _ in classes],
        [i for i, _, _ in classes],
        {i: name for i, name, _ in classes},
    )


def _ilsvrc_truth(root: Path, protocol: str, split: str | None) -> Truth:
    classes = _classes(root / "classes.txt")
    ids = [i for i, _, _ in classes]
    names = {i: name for i, _, name in classes}
    wnid_to_id = {wnid: i for i, wnid, _ in classes}
    sets = root / "ImageSets"
    splits = sorted(p.stem for p in sets.glob("*.txt")) if sets.is_dir() else []
    chosen = _pick_split(splits, split, "ILSVRC image lists")
    stems = [line.split()[0] for line in (sets / f"{chosen}.txt").read_text().splitlines() if line.strip()]
    xml_dir = root / "Annotations" / chosen
    if not xml_dir.is_dir():
        raise TruthError(f"no annotations for split {chosen!r}: the labels of this split were withheld")
    det = _xml_truth(xml_dir, stems, [wnid for _, wnid, _ in classes], ids, names)
    if protocol == "ilsvrc-det":
        blacklist_file = sets / "DET" / f"{chosen}_blacklist.txt"
        blacklist = set()
        if blacklist_file.exists():
            for line in blacklist_file.read_text().splitlines():
                fields = line.split()
                if len(fields) == 2 and fields[1] in wnid_to_id:
                    blacklist.add((int(fields[0]), wnid_to_id[fields[1]]))
            return replace(det, blacklist=frozenset(blacklist))
    labels_file = root / "CLS-LOC" / f"{chosen}_labels.txt"
    if not labels_file.exists():
        raise TruthError(f"{labels_file.relative_to(root)} is missing")
    pairs = np.array(
        [[int(v) for v in line.split()] for line in labels_file.read_text().splitlines() if line.strip()],
        dtype=np.int64,
    ).reshape(-1, 2)
    # Localization instances are the boxes of each image's true class (ILSVRC Eq. 2).
    true_class = dict(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist(), strict=True))
    keep = np.array(
        [true_class.get(int(i)) == int(c) for i, c in zip(det.box_image, det.box_category, strict=True)],
        dtype=bool,
    )
    return ImageLabels(
        image_ids=pairs[:, 0],
        labels=pairs[:, 1],
        box_image=det.box_image[keep],
        boxes=det.boxes[keep],
        category_names=names,
        pixel_inclusive=True,
    )


def _coco_truth(path: Path) -> GroundTruth:
    try:
        data = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TruthError(f"{path.name} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or "images" not in data:
        raise TruthError(f"{path.name} is not a COCO annotation file (no 'images')")
    if "annotations" not in data or path.name.startswith("image_info_"):
        raise TruthError(f"{path.name} holds no annotations: the labels of this split were withheld")
    return ground_truth_from_coco(data)


def load_ground_truth(protocol: str, path: Path, split: str | None = None) -> Truth:
    """Ground truth for ``protocol`` from a COCO JSON file or a VOC/ILSVRC/COCO export (folder or archive)."""
    if protocol not in PROTOCOLS:
        raise TruthError(f"unknown protocol {protocol!r}; choose from {', '.join(sorted(PROTOCOLS))}")
    path = Path(path)
    if not path.exists():
        raise TruthError(f"{path} does not exist")
    if path.is_file() and not _is_archive(path):
        if protocol in LABEL_PROTOCOLS:
            raise TruthError(f"{protocol} reads an ILSVRC export folder or archive, not a single file")
        return _coco_truth(path)
    with _as_directory(path) as root:
        if (root / "annotations").is_dir():
            found = sorted(
                p.stem.removeprefix("instances_") for p in (root / "annotations").glob("instances_*")
            )
            chosen = _pick_split(found, split, "COCO annotation files")
            return _coco_truth(root / "annotations" / f"instances_{chosen}.json")
        if (root / "ImageSets" / "Main").is_dir():
            if protocol in LABEL_PROTOCOLS:
                raise TruthError(f"{protocol} needs an ILSVRC export; this is a VOC export")
            return _voc_truth(root, split)
        if (root / "CLS-LOC").is_dir() or (root / "ImageSets" / "DET").is_dir():
            return _ilsvrc_truth(root, protocol if protocol in LABEL_PROTOCOLS else "ilsvrc-det", split)
    raise TruthError(f"{path} is not a COCO, VOC or ILSVRC export")


def load_predictions(protocol: str, data: str | bytes, gt: Truth) -> Prediction:
    """Parse and validate a submission against ``gt``'s image ids, classes and image sizes.

    Detection protocols take COCO results JSON (continuous ``[x, y, w, h]``) against COCO ground truth, or
    ILSVRC text (``image_id class_id score x1 y1 x2 y2``, inclusive corners) against VOC/ILSVRC ground truth.
    """
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    if protocol in LABEL_PROTOCOLS:
        assert isinstance(gt, ImageLabels)
        labels = list(gt.category_names) or np.unique(gt.labels).tolist()
        if protocol == "ilsvrc-cls":
            return read_ilsvrc_cls(text, image_ids=gt.image_ids.tolist(), labels=labels)
        return read_ilsvrc_loc(text, image_ids=gt.image_ids.tolist(), labels=labels)
    assert isinstance(gt, GroundTruth) and protocol in DETECTION_PROTOCOLS
    is_json = text.lstrip()[:1] in ("[", "{")
    checks: dict[str, Any] = {
        "image_ids": gt.image_ids.tolist(),
        "image_sizes": gt.image_sizes,
    }
    if is_json:
        if gt.pixel_inclusive:
            raise SubmissionError(
                [
                    Problem(
                        "file",
                        "COCO results need COCO ground truth; against a VOC/ILSVRC export submit "
                        "ILSVRC text lines 'image_id class_id score x1 y1 x2 y2'",
                    )
                ]
            )
        return parse_coco_results(text, category_ids=gt.category_ids.tolist(), **checks)
    if not gt.pixel_inclusive:
        raise SubmissionError(
            [
                Problem(
                    "file",
                    "this ground truth is COCO JSON: submit a COCO results list "
                    "[{image_id, category_id, bbox, score}, ...]",
                )
            ]
        )
    return read_ilsvrc_det(text, labels=gt.category_ids.tolist(), **checks)


def evaluate_files(
    protocol: str, gt: Truth, pred: Prediction, bootstrap_samples: int = 0, seed: int = 0
) -> dict[str, Any]:
    """The protocol's scores, plus ``bootstrap`` intervals (ILSVRC §6.2) when samples are asked for."""
    result: dict[str, Any] = dict(PROTOCOLS[protocol](gt, pred))
    if bootstrap_samples > 0:
        estimates = bootstrap(PROTOCOLS[protocol], gt, pred, n_samples=bootstrap_samples, seed=seed)
        result["bootstrap"] = {name: est.as_dict() for name, est in estimates.items()}
        result["bootstrap_samples"] = bootstrap_samples
    return result
