"""Exports read by the tools everybody else uses: pycocotools, CVAT's dataset framework (datumaro) and Roboflow's
supervision load our COCO, VOC, YOLO and image-folder exports whole (every split at once, one class numbering)
and find exactly the platform's final boxes and classes, each object once; YOLO's data.yaml resolves as
Ultralytics resolves it."""

from __future__ import annotations

import io
import json
import logging
import os
import zipfile
from pathlib import Path

import pytest
import yaml
from django.core.files.base import ContentFile
from django.core.management import call_command

from annotation.models import FinalBox
from benchmark.exporters import ExportOptions
from benchmark.exporters import export as export_source
from benchmark.exporters.base import ExportBox, ExportCategory, ExportImage, ExportLabel
from benchmark.exporters.memory import MemorySource
from tests.conftest import png_bytes

datumaro = pytest.importorskip("datumaro")  # a test dependency (requirements-dev.txt)


def export(dataset, fmt: str, out, *extra: str) -> None:
    call_command(
        "export",
        "--dataset",
        dataset.name,
        "--format",
        fmt,
        "--split",
        "all",
        "--out",
        str(out),
        "--no-progress",
        *extra,
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )


def final_boxes(dataset) -> list[tuple[int, str, tuple[float, float, float, float]]]:
    """(image id, class name, (x, y, w, h)) of every final box, sorted."""
    return sorted(
        (image_id, name, (x1, y1, x2 - x1, y2 - y1))
        for image_id, name, x1, y1, x2, y2 in FinalBox.objects.filter(dataset=dataset).values_list(
            "image_id", "concept__name", "x1", "y1", "x2", "y2"
        )
    )


def test_pycocotools_reads_the_coco_export_with_empty_segmentations_and_supercategories(labelled, tmp_path):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    dataset = labelled["dataset"]
    export(dataset, "coco", tmp_path / "c", "--no-images")
    coco = COCO(str(tmp_path / "c/annotations/instances_all.json"))
    names = {c["id"]: c["name"] for c in coco.loadCats(coco.getCatIds())}
    assert {c["supercategory"] for c in coco.loadCats(coco.getCatIds())} == {
        "animal"
    }  # the hierarchy's parent
    anns = coco.loadAnns(coco.getAnnIds())
    got = sorted((a["image_id"], names[a["category_id"]], tuple(a["bbox"])) for a in anns)
    assert got == final_boxes(dataset) and got
    # A box is one object: the segmentation field is there (detectron2 and mmdetection look for it) and empty.
    assert all(a["segmentation"] == [] for a in anns)
    detections = coco.loadRes([{**a, "score": 1.0} for a in anns])
    evaluation = COCOeval(coco, detections, "bbox")
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
    assert evaluation.stats[0] == pytest.approx(1.0)  # the truth scored against itself


def datumaro_boxes(path, fmt: str) -> list[tuple[int, str, tuple[float, float, float, float]]]:
    from datumaro.components.annotation import AnnotationType, Bbox
    from datumaro.components.dataset import Dataset as DmDataset

    data = DmDataset.import_from(str(path), fmt)
    labels = data.categories()[AnnotationType.label]
    out = []
    for item in data:
        image_id = int(item.id.rsplit("/", 1)[-1])
        for ann in item.annotations:
            assert isinstance(ann, Bbox), ann  # each object once: no polygon or label beside its box
            out.append((image_id, labels[ann.label].name, tuple(ann.get_bbox())))
    return sorted(out)


def close(a, b, tol: float) -> bool:
    return len(a) == len(b) and all(
        i == j and n == m and all(abs(p - q) <= tol for p, q in zip(x, y, strict=True))
        for (i, n, x), (j, m, y) in zip(a, b, strict=True)
    )


def real_pixels(images) -> None:
    """Give the fixture's images decodable files of their recorded size (datumaro opens some of them)."""
    for image in images:
        image.file.save("img.png", ContentFile(png_bytes((image.width, image.height))), save=True)


def test_datumaro_reads_coco_voc_and_yolo_exports_with_the_final_boxes(labelled, tmp_path, caplog):
    dataset = labelled["dataset"]
    real_pixels(labelled["images"])
    truth = final_boxes(dataset)
    with caplog.at_level(logging.WARNING):
        export(dataset, "coco", tmp_path / "coco")  # datumaro wants the images folder beside the JSON
        coco = datumaro_boxes(tmp_path / "coco", "coco_instances")
    assert close(coco, truth, 0.01)  # datumaro keeps coordinates to 1/100 pixel, as float32
    assert not [r for r in caplog.records if "segmentation" in r.getMessage()]  # no missing-field warning

    # VOC corners are 1-based inclusive integer pixels: within a pixel of the continuous box after the -1.
    export(dataset, "voc", tmp_path / "voc")
    voc = datumaro_boxes(tmp_path / "voc", "voc_detection")
    slug = {"domestic_cat": "domestic cat"}
    voc = [(i, slug.get(n, n), (x - 1, y - 1, w + 1, h + 1)) for i, n, (x, y, w, h) in voc]
    assert close(voc, truth, 1.0)

    # YOLO stores normalized centres and sizes; datumaro needs the images to denormalize.
    export(dataset, "yolo", tmp_path / "yolo")
    yolo = datumaro_boxes(tmp_path / "yolo", "yolo")
    assert close(yolo, truth, 0.01)  # six decimals of the image size, read back as float32


def test_coco_annotations_carry_voc_attributes(labelled, tmp_path):
    dataset = labelled["dataset"]
    export(dataset, "coco", tmp_path / "c", "--no-images")
    data = json.loads((tmp_path / "c/annotations/instances_all.json").read_text())
    assert all(
        set(a["attributes"]) == {"difficult", "truncated", "occluded", "viewpoint"}
        for a in data["annotations"]
    )


# Every format whole: an in-memory dataset with three splits (test withheld), a class seen in train only and
# wnids whose order differs from the ids', read back by each peer as a user would read the export.
PEER_CLASSES = [
    ExportCategory(31, "n02121808", "domestic cat", "animal"),
    ExportCategory(32, "n02084071", "dog", "animal"),
    ExportCategory(33, "n02374451", "horse", "animal"),
    ExportCategory(34, "n01503061", "bird", "animal"),
    ExportCategory(35, "n02691156", "airplane", "vehicle"),
]
NAME = {c.id: c.name for c in PEER_CLASSES}
LABELLED = ("train", "val")


def peer_source() -> MemorySource:
    images, boxes, labels, blacklist = [], [], [], []
    for k in range(24):
        split = ("train", "val", "test")[k % 3]
        pk = 100 + k
        width, height = 120 + 3 * k, 90 + 2 * k
        images.append(ExportImage(pk, f"{pk:012d}.png", width, height, split))
        # val shows only cats and dogs: a class numbering taken from one split's folders would differ.
        category = PEER_CLASSES[k % 5 if split != "val" else k % 2].id
        for n in range(1 + k % 2):
            x1, y1 = 5.25 + 7 * n + k, 4.75 + 3 * n
            boxes.append(ExportBox(len(boxes) + 1, pk, category, x1, y1, x1 + 40.5, y1 + 30.25))
        labels.append(ExportLabel(pk, category, True))
    blacklist.append((100, PEER_CLASSES[0].id))  # its box is left out of the localization truth
    return MemorySource(
        "peers",
        PEER_CLASSES,
        images,
        boxes,
        labels,
        {i.id: png_bytes((i.width, i.height)) for i in images},
        blacklist,
    )


def peer_truth(source: MemorySource) -> dict[str, list[tuple[int, str, tuple[float, float, float, float]]]]:
    """(image id, class name, (x, y, w, h)) of every exported box, by labelled split."""
    split = {i.id: i.split for i in source.images_}
    black = set(source.blacklist_)
    truth: dict[str, list] = {s: [] for s in LABELLED}
    for b in source.boxes_:
        if split[b.image_id] in LABELLED and (b.image_id, b.category_id) not in black:
            truth[split[b.image_id]].append(
                (b.image_id, NAME[b.category_id], (b.x1, b.y1, b.x2 - b.x1, b.y2 - b.y1))
            )
    return {s: sorted(rows) for s, rows in truth.items()}


@pytest.fixture(scope="module")
def peer_exports(tmp_path_factory) -> tuple[MemorySource, Path]:
    source = peer_source()
    root = tmp_path_factory.mktemp("peers")
    for fmt in ("coco", "voc", "yolo", "imagefolder"):
        export_source(source, fmt, root / fmt, ExportOptions())
    return source, root


def datumaro_whole(path: Path, fmt: str):
    """The export read at its root, every split at once: subsets, class names in the reader's numbering, and
    per subset the (image id, class name, annotation) rows."""
    from datumaro.components.annotation import AnnotationType
    from datumaro.components.dataset import Dataset as DmDataset

    data = DmDataset.import_from(str(path), fmt)
    names = [label.name for label in data.categories()[AnnotationType.label]]
    rows: dict[str, list] = {}
    for item in data:
        image_id = int(item.id.rsplit("/", 1)[-1])
        rows.setdefault(item.subset, []).extend((image_id, names[a.label], a) for a in item.annotations)
    return names, rows


@pytest.mark.parametrize("fmt, reader", [("coco", "coco"), ("voc", "voc_detection"), ("yolo", "yolo")])
def test_datumaro_imports_every_detection_export_whole_with_each_object_once(peer_exports, fmt, reader):
    from datumaro.components.annotation import Bbox

    source, root = peer_exports
    truth = peer_truth(source)
    names, rows = datumaro_whole(root / fmt, reader)
    expected = [c.name for c in PEER_CLASSES]
    if fmt == "voc":  # VOC names are slugs after a background class
        names = [n.replace("_", " ") for n in names if n != "background"]
    assert names == expected  # one class table for every split, in the export's order
    # The withheld test split has images and no labels: COCO and VOC list them; YOLO has no label files for
    # them (a YOLO reader meets them only through data.yaml).
    assert set(rows) == ({"train", "val"} if fmt == "yolo" else {"train", "val", "test"})
    for split in LABELLED:
        got = []
        for image_id, name, ann in rows[split]:
            assert isinstance(ann, Bbox), ann  # each object once: no polygon or image label beside its box
            got.append((image_id, name.replace("_", " "), tuple(ann.get_bbox())))
        got.sort()
        if fmt == "voc":  # 1-based inclusive integer corners: within a pixel after the devkit's -1
            got = [(i, n, (x - 1, y - 1, w + 1, h + 1)) for i, n, (x, y, w, h) in got]
        assert close(got, truth[split], 1.0 if fmt == "voc" else 0.01), split
    assert not rows.get("test")  # no test label reaches a peer


def test_datumaro_imports_the_image_folder_export_whole_as_imagenet_lists(peer_exports):
    source, root = peer_exports
    names, rows = datumaro_whole(root / "imagefolder", "imagenet_txt")
    assert names == sorted(c.wnid for c in PEER_CLASSES)  # synsets.txt: one numbering for every split
    assert set(rows) == {"train", "val", "test"} and not rows["test"]  # test images carry no label
    wnid = {c.id: c.wnid for c in PEER_CLASSES}
    shows = {lab.image_id: wnid[lab.category_id] for lab in source.labels_}  # each image shows one class
    for split in LABELLED:
        expected = sorted((i.id, shows[i.id]) for i in source.images_ if i.split == split)
        assert sorted((i, n) for i, n, _ in rows[split]) == expected


def test_image_folders_number_the_classes_alike_in_every_split(peer_exports, tmp_path):
    source, root = peer_exports
    folder = root / "imagefolder"
    synsets = (folder / "synsets.txt").read_text().split()
    assert synsets == sorted(c.wnid for c in PEER_CLASSES)
    for split in LABELLED:
        # torchvision's ImageFolder (and Ultralytics' classification loader) number the sorted class folders.
        classes = sorted(entry.name for entry in os.scandir(folder / "images" / split) if entry.is_dir())
        assert classes == synsets, split
        for line in (folder / f"{split}.txt").read_text().splitlines():
            path, index = line.split()
            assert path.split("/")[1] == synsets[int(index)] and (folder / "images" / path).is_file()
    # An archive keeps the folders of classes a split has no image of.
    export_source(source, "imagefolder", tmp_path / "f.zip", ExportOptions(include_images=False))
    with zipfile.ZipFile(tmp_path / "f.zip") as zf:
        names = zf.namelist()
    for split in LABELLED:
        assert all(any(n.startswith(f"images/{split}/{w}/") for n in names) for w in synsets), split


def supervision_rows(dataset) -> list[tuple[int, str, tuple[float, float, float, float]]]:
    rows = []
    for path, _, detections in dataset:
        image_id = int(Path(path).stem)
        for (x1, y1, x2, y2), class_id in zip(detections.xyxy, detections.class_id, strict=True):
            name = dataset.classes[class_id].replace("_", " ")
            rows.append((image_id, name, (float(x1), float(y1), float(x2 - x1), float(y2 - y1))))
    return sorted(rows)


def test_supervision_reads_the_coco_voc_and_yolo_exports(peer_exports):
    sv = pytest.importorskip("supervision")
    source, root = peer_exports
    truth = peer_truth(source)
    for split in LABELLED:
        coco = sv.DetectionDataset.from_coco(
            str(root / "coco/images" / split), str(root / f"coco/annotations/instances_{split}.json")
        )
        assert close(supervision_rows(coco), truth[split], 0.01), split
        yolo = sv.DetectionDataset.from_yolo(
            str(root / "yolo/images" / split), str(root / "yolo/labels" / split), str(root / "yolo/data.yaml")
        )
        assert yolo.classes == [c.name for c in PEER_CLASSES]
        assert close(supervision_rows(yolo), truth[split], 0.01), split
    test = sv.DetectionDataset.from_coco(
        str(root / "coco/images/test"), str(root / "coco/annotations/image_info_test.json")
    )
    assert len(test) == 8 and not supervision_rows(test)  # withheld: the images, no object
    voc = sv.DetectionDataset.from_pascal_voc(str(root / "voc/JPEGImages"), str(root / "voc/Annotations"))
    assert len(voc) == len(source.images_)
    # supervision reads VOC's 1-based corners as x - 1: whole pixels around the continuous box.
    assert close(supervision_rows(voc), sorted(truth["train"] + truth["val"]), 1.0)


def ultralytics_split_dirs(data_yaml: Path, datasets_dir: Path) -> dict[str, Path]:
    """Where Ultralytics looks for each split (``check_det_dataset`` in ultralytics/data/utils.py): the
    ``path`` key is the dataset root, or without one the folder of the YAML file as it was named; a relative
    root that does not exist from the working directory is taken under its ``DATASETS_DIR``; each split is
    resolved against that root. It also requires ``train`` and ``val``, and ``nc`` equal to the names."""
    data = yaml.safe_load(data_yaml.read_text())
    assert "train" in data and "val" in data and data["nc"] == len(data["names"])
    root = Path(data.get("path") or data_yaml.parent)
    if not root.exists() and not root.is_absolute():
        root = (datasets_dir / root).resolve()
    return {k: (root / data[k]).resolve() for k in ("train", "val", "test") if data.get(k)}


def test_yolo_data_yaml_resolves_as_ultralytics_resolves_it_from_any_working_directory(
    peer_exports, tmp_path, monkeypatch
):
    _, root = peer_exports
    export_dir = (root / "yolo").resolve()
    elsewhere = tmp_path / "runs"
    (elsewhere / "images/train").mkdir(parents=True)  # a trainer's own folders must not be picked up
    monkeypatch.chdir(elsewhere)
    for named in (export_dir / "data.yaml", Path(os.path.relpath(export_dir / "data.yaml"))):
        dirs = ultralytics_split_dirs(named, tmp_path / "datasets")
        assert dirs == {s: export_dir / "images" / s for s in ("train", "val", "test")}, named


@pytest.mark.parametrize(
    "splits, stand_in",
    [(("all",), "all"), (("train", "test"), "train"), (("val",), "val")],
    ids=["no split version", "no val split", "one split chosen"],
)
def test_a_yolo_export_without_train_or_val_still_gives_ultralytics_both(tmp_path, splits, stand_in):
    """Issue 31: an export without a split version wrote `all: images/all` only, and Ultralytics refuses a
    data.yaml without `train` and `val`; the folders written stand in for the missing ones (a withheld split,
    which has no labels, never does)."""
    import dataclasses

    import supervision as sv

    source = peer_source()
    source.images_ = [
        dataclasses.replace(i, split=splits[k % len(splits)]) for k, i in enumerate(source.images_)
    ]
    export_source(source, "yolo", tmp_path / "yolo", ExportOptions())
    data_yaml = tmp_path / "yolo/data.yaml"

    dirs = ultralytics_split_dirs(data_yaml, tmp_path / "datasets")
    expected = (tmp_path / "yolo/images" / stand_in).resolve()
    assert dirs["train"] == dirs["val"] == expected
    assert "test" not in dirs or dirs["test"] == (tmp_path / "yolo/images/test").resolve()
    labels = tmp_path / "yolo/labels" / stand_in
    read = sv.DetectionDataset.from_yolo(str(dirs["train"]), str(labels), str(data_yaml))
    in_folder = {i.id for i in source.images_ if i.split == stand_in}
    black = set(source.blacklist_)  # too ambiguous to localize: left out of the boxes
    written = [
        b for b in source.boxes_ if b.image_id in in_folder and (b.image_id, b.category_id) not in black
    ]
    assert len(read) > 0 and sum(len(d) for _, _, d in read) == len(written)


def test_coco_export_of_a_withheld_split_reads_as_images_without_objects(peer_exports):
    from pycocotools.coco import COCO

    _, root = peer_exports
    path = root / "coco/annotations/image_info_test.json"
    data = json.loads(path.read_text())
    assert data["annotations"] == [] and len(data["images"]) == 8
    assert not COCO(str(path)).getAnnIds()
