"""Exporters on an in-memory source: files and content per format, archives, checksums, withheld test labels,
and COCO AP on exported files equal to pycocotools' COCOeval."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import tarfile
import zipfile

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from benchmark.exporters import ExportOptions, export, export_dataset
from benchmark.exporters.base import ExportBox, ExportCategory, ExportImage, ExportLabel, hidden_truth_path
from benchmark.exporters.memory import MemorySource
from benchmark.metrics.coco import STAT_NAMES, evaluate_coco
from benchmark.metrics.files import evaluate_files, load_ground_truth, load_predictions

CATS = [
    ExportCategory(11, "n02084071", "dog", "animal"),
    ExportCategory(12, "n02121808", "domestic cat", "animal"),
    ExportCategory(30, "n04468005", "train", ""),
]


def generated_source(seed: int, n_images: int = 60, with_bytes: bool = True) -> MemorySource:
    rng = np.random.default_rng(seed)
    images, boxes, labels = [], [], []
    for k in range(n_images):
        pk = 100 + 7 * k
        w, h = int(rng.integers(200, 640)), int(rng.integers(150, 480))
        split = ("train", "val", "test")[k % 3]
        images.append(ExportImage(pk, f"{pk:012d}.png", w, h, split))
        for _ in range(int(rng.integers(0, 6))):
            bw, bh = rng.uniform(2, w / 2), rng.uniform(2, h / 2)
            x, y = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            cat = CATS[int(rng.integers(0, len(CATS)))].id
            boxes.append(ExportBox(len(boxes) + 1, pk, cat, x, y, x + bw, y + bh))
        if rng.random() < 0.3:
            labels.append(ExportLabel(pk, 30, False))
    return MemorySource(
        "demo-set",
        CATS,
        images,
        boxes,
        labels,
        {i.id: f"bytes of {i.id}".encode() for i in images} if with_bytes else {},
    )


def detections_for(data: dict, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    size = {im["id"]: (im["width"], im["height"]) for im in data["images"]}
    results = []
    for ann in data["annotations"]:
        if rng.random() < 0.8:
            x, y, w, h = ann["bbox"]
            width, height = size[ann["image_id"]]
            jitter = rng.normal(0, 0.08, 4) * [w, h, w, h]
            x1, y1 = max(0.0, x + jitter[0]), max(0.0, y + jitter[1])
            x2, y2 = (
                min(float(width), x1 + max(1.0, w + jitter[2])),
                min(float(height), y1 + max(1.0, h + jitter[3])),
            )
            results.append(
                {
                    "image_id": ann["image_id"],
                    "category_id": ann["category_id"],
                    "bbox": [x1, y1, x2 - x1, y2 - y1],
                    "score": float(rng.uniform(0.2, 1.0)),
                }
            )
    for im in data["images"]:
        for _ in range(int(rng.integers(0, 3))):
            results.append(
                {
                    "image_id": im["id"],
                    "category_id": int(rng.choice([11, 12, 30])),
                    "bbox": [float(rng.uniform(0, 50)), float(rng.uniform(0, 50)), 40.0, 30.0],
                    "score": float(rng.uniform(0, 0.6)),
                }
            )
    return results


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_coco_export_loads_in_pycocotools_and_our_ap_equals_cocoeval(tmp_path, seed):
    out = tmp_path / "coco"
    export(generated_source(seed), "coco", out, ExportOptions(split="val", include_images=False))
    gt_file = out / "annotations" / "instances_val.json"
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO(str(gt_file))
    assert {c["supercategory"] for c in coco_gt.dataset["categories"]} == {"animal", "train"}
    results = detections_for(coco_gt.dataset, seed)
    pred_file = tmp_path / "results.json"
    pred_file.write_text(json.dumps(results))
    with contextlib.redirect_stdout(io.StringIO()):
        ev = COCOeval(coco_gt, coco_gt.loadRes(str(pred_file)), "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    gt = load_ground_truth("coco", gt_file)
    ours = evaluate_files("coco", gt, load_predictions("coco", pred_file.read_bytes(), gt))
    assert [ours[k] for k in STAT_NAMES] == ev.stats.tolist()  # all 12 stats, AR included, equal
    assert ours["AP"] > 0.1  # the detections are informative: a broken export would score ~0


def test_coco_export_writes_exact_box_geometry_and_area(tmp_path):
    source = generated_source(3)
    export(source, "coco", tmp_path / "c", ExportOptions(split="train", include_images=False))
    data = json.loads((tmp_path / "c/annotations/instances_train.json").read_text())
    train_ids = {i.id for i in source.images_ if i.split == "train"}
    expected = {b.id: b for b in source.boxes_ if b.image_id in train_ids}
    assert {a["id"] for a in data["annotations"]} == set(expected)
    for ann in data["annotations"]:
        box = expected[ann["id"]]
        assert ann["bbox"] == [box.x1, box.y1, box.x2 - box.x1, box.y2 - box.y1]
        assert ann["area"] == pytest.approx((box.x2 - box.x1) * (box.y2 - box.y1))
    assert data["info"]["version"] == "memory"


def test_manifest_checksums_match_every_written_file_and_counts_per_class(tmp_path):
    source = generated_source(4)
    manifest = export(source, "voc", tmp_path / "v", ExportOptions())
    for rel, entry in manifest["files"].items():
        data = (tmp_path / "v" / rel).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["bytes"]
    on_disk = json.loads((tmp_path / "v/manifest.json").read_text())
    assert on_disk["counts"] == manifest["counts"]
    train_ids = {i.id for i in source.images_ if i.split == "train"}
    dogs = sum(1 for b in source.boxes_ if b.category_id == 11 and b.image_id in train_ids)
    assert manifest["counts"]["classes"]["dog"]["train"]["boxes"] == dogs
    assert manifest["counts"]["classes"]["dog"]["test"]["boxes"] == 0  # withheld
    assert manifest["labels_withheld"] == ["test"]


def test_voc_export_has_xml_per_image_lists_and_devkit_corners(tmp_path):
    source = generated_source(5)
    export(source, "voc", tmp_path / "v", ExportOptions())
    root = tmp_path / "v"
    assert (root / "ImageSets/Main/train.txt").read_text().split() == [
        f"{i.id:012d}" for i in source.images_ if i.split == "train"
    ]
    train_ids = {i.id for i in source.images_ if i.split == "train"}
    box = next(b for b in source.boxes_ if b.image_id in train_ids)
    xml = (root / f"Annotations/{box.image_id:012d}.xml").read_text()
    assert f"<xmin>{round(box.x1) + 1}</xmin>" in xml and f"<xmax>{round(box.x2)}</xmax>" in xml
    dog_list = (root / "ImageSets/Main/dog_train.txt").read_text().splitlines()
    assert all(line.endswith(" 1") for line in dog_list) and dog_list
    assert (
        root / "JPEGImages" / f"{box.image_id:012d}.png"
    ).read_bytes() == f"bytes of {box.image_id}".encode()
    # Test images: size-only XML, no per-class lists.
    test_id = next(i.id for i in source.images_ if i.split == "test")
    assert "<object>" not in (root / f"Annotations/{test_id:012d}.xml").read_text()
    assert not list((root / "ImageSets/Main").glob("*_test.txt"))


def test_ilsvrc_export_lists_positives_partials_negatives_and_blacklist(tmp_path):
    images = [ExportImage(k, f"{k:012d}.jpg", 100, 100, "val") for k in (1, 2, 3)]
    boxes = [ExportBox(1, 1, 11, 10.0, 10.0, 30.0, 40.0)]
    labels = [ExportLabel(1, 11, True), ExportLabel(2, 11, True), ExportLabel(3, 11, False)]
    source = MemorySource("s", CATS, images, boxes, labels)
    export(source, "ilsvrc", tmp_path / "i", ExportOptions(include_images=False))
    root = tmp_path / "i"
    assert (root / "ImageSets/DET/val_n02084071.txt").read_text().splitlines() == [
        "000000000001 1",
        "000000000002 0",
        "000000000003 -1",
    ]
    assert (root / "ImageSets/DET/val_blacklist.txt").read_text() == "2 n02084071\n"
    assert (root / "CLS-LOC/val_labels.txt").read_text() == "1 11\n2 11\n"
    xml = (root / "Annotations/val/000000000001.xml").read_text()
    assert "<name>n02084071</name>" in xml and "<xmin>10</xmin>" in xml and "<xmax>29</xmax>" in xml
    assert (root / "classes.txt").read_text().splitlines()[0] == "11 n02084071 dog"


def test_yolo_export_normalizes_centre_and_size(tmp_path):
    images = [ExportImage(1, "000000000001.png", 200, 100, "train")]
    boxes = [ExportBox(1, 1, 12, 20.0, 10.0, 60.0, 50.0)]
    export(
        MemorySource("s", CATS, images, boxes), "yolo", tmp_path / "y", ExportOptions(include_images=False)
    )
    assert (
        tmp_path / "y/labels/train/000000000001.txt"
    ).read_text() == "1 0.200000 0.300000 0.200000 0.400000\n"
    yaml = (tmp_path / "y/data.yaml").read_text()
    assert 'names: ["dog", "domestic cat", "train"]' in yaml and "nc: 3" in yaml


def test_imagefolder_export_puts_single_class_images_under_their_synset(tmp_path):
    images = [ExportImage(k, f"{k:012d}.png", 10, 10, "train") for k in (1, 2)]
    boxes = [
        ExportBox(1, 1, 12, 1.0, 1.0, 5.0, 5.0),
        ExportBox(2, 2, 11, 1, 1, 5, 5),
        ExportBox(3, 2, 12, 1, 1, 5, 5),
    ]
    source = MemorySource("s", CATS, images, boxes, image_bytes={1: b"one", 2: b"two"})
    export(source, "imagefolder", tmp_path / "f", ExportOptions())
    assert (tmp_path / "f/images/train/n02121808/000000000001.png").read_bytes() == b"one"
    # One class list for every split, by wnid: the order torchvision's ImageFolder gives the class folders.
    assert (tmp_path / "f/synsets.txt").read_text() == "n02084071\nn02121808\nn04468005\n"
    assert (tmp_path / "f/train.txt").read_text() == "train/n02121808/000000000001.png 1\n"
    assert (tmp_path / "f/classes.tsv").read_text().splitlines()[1:] == [
        "0\t11\tn02084071\tdog",
        "1\t12\tn02121808\tdomestic cat",
        "2\t30\tn04468005\ttrain",
    ]
    # Every class has its folder in the split, whether the split has an image of it or not.
    assert sorted(p.name for p in (tmp_path / "f/images/train").iterdir()) == [
        "n02084071",
        "n02121808",
        "n04468005",
    ]
    assert not list(
        (tmp_path / "f/images/train").rglob("000000000002.png")
    )  # two classes: not a classification image


@pytest.mark.parametrize("fmt", ["coco", "voc", "ilsvrc", "yolo", "imagefolder"])
def test_export_of_test_writes_no_label_of_a_test_image_and_the_truth_goes_beside_it(tmp_path, fmt):
    source = generated_source(6)
    test_ids = {i.id for i in source.images_ if i.split == "test"}
    test_boxes = [b for b in source.boxes_ if b.image_id in test_ids]
    assert test_boxes
    out = tmp_path / "export"
    manifest, hidden = export_dataset(source, fmt, out, ExportOptions(split="test", provenance=True))
    assert hidden is not None and manifest["labels_withheld"] == ["test"]
    # Every written file: no coordinates of a test box, in any rendering the exporters use.
    sizes = {i.id: (i.width, i.height) for i in source.images_}
    needles = set()
    for b in test_boxes:
        w, h = sizes[b.image_id]
        needles |= {repr(b.x1), repr(b.y2), f"{(b.x1 + b.x2) / 2 / w:.6f}", f"{(b.y2 - b.y1) / h:.6f}"}
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            assert not [n for n in needles if n in text], path
            assert "<object>" not in text
            if path.suffix == ".json" and path.parent.name == "annotations":
                assert path.name == "image_info_test.json" and json.loads(text)["annotations"] == []
    assert not (out / "provenance").exists()
    truth_dir = hidden_truth_path(out)
    assert not truth_dir.is_relative_to(out)
    truth_text = "".join(p.read_text() for p in truth_dir.rglob("*") if p.is_file())
    if fmt == "coco":
        assert any(repr(b.x1) in truth_text for b in test_boxes)  # the check above could fail
    if fmt in ("voc", "ilsvrc"):
        assert "<object>" in truth_text


@pytest.mark.parametrize("name", ["out.zip", "out.tar.gz"])
def test_archive_outputs_hold_the_same_files_as_the_manifest(tmp_path, name):
    manifest = export(generated_source(7), "yolo", tmp_path / name, ExportOptions(split="train"))
    archive = tmp_path / name
    if name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            names = set(zf.namelist())
            payload = zf.read(next(iter(manifest["files"])))
    else:
        with tarfile.open(archive) as tf:
            names = {m.name for m in tf.getmembers() if m.isfile()}
            member = tf.extractfile(next(iter(manifest["files"])))
            assert member is not None
            payload = member.read()
    assert names == set(manifest["files"]) | {"manifest.json"}
    assert hashlib.sha256(payload).hexdigest() == next(iter(manifest["files"].values()))["sha256"]


def test_an_output_folder_with_files_is_refused(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "old.txt").write_text("x")
    with pytest.raises(ValueError, match="not empty"):
        export(generated_source(8), "coco", tmp_path / "busy", ExportOptions())


def test_voc_and_ilsvrc_exports_evaluate_perfect_detections_to_map_one(tmp_path):
    source = generated_source(9, with_bytes=False)
    export(source, "ilsvrc", tmp_path / "i", ExportOptions(split="val", include_images=False))
    export(source, "voc", tmp_path / "v", ExportOptions(split="val", include_images=False))
    val = {i.id for i in source.images_ if i.split == "val"}
    for protocol, root, base in (("ilsvrc-det", tmp_path / "i", 0), ("voc12", tmp_path / "v", 1)):
        gt = load_ground_truth(protocol, root)
        lines = [
            f"{b.image_id} {b.category_id} 0.9 {round(b.x1) + base} {round(b.y1) + base} "
            f"{round(b.x2) - 1 + base} {round(b.y2) - 1 + base}"
            for b in source.boxes_
            if b.image_id in val
        ]
        result = evaluate_files(protocol, gt, load_predictions(protocol, "\n".join(lines), gt))
        assert result["mAP"] == pytest.approx(1.0)


def test_coco_results_against_exported_coco_truth_match_evaluate_coco_directly(tmp_path):
    source = generated_source(10)
    export(source, "coco", tmp_path / "c", ExportOptions(split="train", include_images=False))
    gt = load_ground_truth("coco", tmp_path / "c")  # the export folder itself, split found alone
    data = json.loads((tmp_path / "c/annotations/instances_train.json").read_text())
    dets = load_predictions("coco", json.dumps(detections_for(data, 1)), gt)
    assert evaluate_files("coco", gt, dets) == evaluate_coco(gt, dets)


def test_hidden_truth_sits_beside_the_export_with_the_same_kind(tmp_path):
    assert hidden_truth_path(tmp_path / "x.tar.gz") == tmp_path / "x-test-groundtruth.tar.gz"
    assert hidden_truth_path(tmp_path / "x.zip") == tmp_path / "x-test-groundtruth.zip"
    assert hidden_truth_path(tmp_path / "x") == tmp_path / "x-test-groundtruth"


@pytest.mark.parametrize(
    "fmt, protocol", [("coco", "coco"), ("ilsvrc", "ilsvrc-det"), ("ilsvrc", "ilsvrc-cls")]
)
def test_a_withheld_export_cannot_serve_as_ground_truth(tmp_path, fmt, protocol):
    from benchmark.metrics.files import TruthError

    export(generated_source(11), fmt, tmp_path / "t", ExportOptions(split="test", include_images=False))
    target = tmp_path / "t/annotations/image_info_test.json" if fmt == "coco" else tmp_path / "t"
    with pytest.raises(TruthError, match="withheld"):
        load_ground_truth(protocol, target)
