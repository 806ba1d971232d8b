"""On an in-memory source (no database): blacklisted pairs leave every format's localization truth but stay
listed, VOC attributes and COCO segmentations are written, ILSVRC lists negative images, and the statistics
report counts what an export holds."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from benchmark.dataset_stats import dataset_statistics, markdown
from benchmark.exporters import ExportOptions, export
from benchmark.exporters.base import ExportBox, ExportCategory, ExportImage, ExportLabel, per_image
from benchmark.exporters.memory import MemorySource

DOG, CAT = 11, 12
CATS = [
    ExportCategory(DOG, "n02084071", "dog", "animal"),
    ExportCategory(CAT, "n02121808", "domestic cat", "animal"),
]


def source() -> MemorySource:
    images = [ExportImage(pk, f"{pk:012d}.png", 100, 50, "train") for pk in (1, 2, 3, 4)]
    boxes = [
        ExportBox(10, 1, DOG, 0.0, 0.0, 50.0, 25.0, difficult=True, occluded=True, viewpoint="left"),
        ExportBox(11, 1, CAT, 60.0, 10.0, 90.0, 40.0, truncated=True, fine="tabby"),
        ExportBox(12, 2, CAT, 10.0, 10.0, 20.0, 20.0),
        ExportBox(13, 2, DOG, 30.0, 10.0, 40.0, 20.0),
    ]
    labels = [
        ExportLabel(1, DOG, True),
        ExportLabel(1, CAT, True),
        ExportLabel(2, CAT, True),
        ExportLabel(2, DOG, True),
        ExportLabel(3, DOG, False),
        ExportLabel(3, CAT, False),
        ExportLabel(4, DOG, False),
    ]
    return MemorySource("zoo", CATS, images, boxes, labels, blacklist_=[(2, CAT)])


def test_per_image_drops_the_boxes_of_blacklisted_pairs_and_keeps_their_labels():
    s = source()
    records = {
        r.image.id: r
        for r in per_image(s.images("train"), s.boxes("train"), s.labels("train"), s.blacklist("train"))
    }
    assert [b.id for b in records[2].boxes] == [13] and records[2].blacklisted == {CAT}
    assert CAT in records[2].positive_classes()
    assert [b.id for b in records[1].boxes] == [10, 11] and not records[1].blacklisted


def test_voc_xml_carries_the_attributes_and_lists_mark_blacklisted_pairs_zero(tmp_path):
    manifest = export(
        source(), "voc", tmp_path / "v", ExportOptions(include_images=False, withheld=frozenset())
    )
    objects = ET.fromstring((tmp_path / "v/Annotations/000000000001.xml").read_text()).findall("object")
    dog, cat = objects
    assert (dog.findtext("difficult"), dog.findtext("occluded"), dog.findtext("pose")) == ("1", "1", "Left")
    assert dog.findtext("truncated") == "1"  # touches the border, nobody said otherwise
    assert cat.findtext("truncated") == "1" and cat.findtext("difficult") == "0"
    assert cat.find("attributes/attribute/value").text == "tabby"
    assert "000000000002  0" in (tmp_path / "v/ImageSets/Main/domestic_cat_train.txt").read_text()
    assert (tmp_path / "v/blacklist/train.txt").read_text() == f"2 {CAT} n02121808\n"
    assert manifest["counts"]["boxes"] == {"train": 3} and manifest["blacklisted"] == {"train": 1}
    assert "domestic_cat:::" in (tmp_path / "v/labelmap.txt").read_text()


def test_coco_writes_each_box_once_with_an_empty_segmentation_and_leaves_blacklisted_boxes_out(tmp_path):
    export(source(), "coco", tmp_path / "c", ExportOptions(include_images=False, withheld=frozenset()))
    data = json.loads((tmp_path / "c/annotations/instances_train.json").read_text())
    by_id = {a["id"]: a for a in data["annotations"]}
    assert set(by_id) == {10, 11, 13}
    assert by_id[11]["bbox"] == [60.0, 10.0, 30.0, 30.0] and by_id[11]["segmentation"] == []
    assert by_id[11]["attributes"] == {
        "difficult": False,
        "truncated": True,
        "occluded": False,
        "viewpoint": "unspecified",
        "fine_label": "tabby",
    }


def test_ilsvrc_lists_images_verified_absent_for_every_class_as_negative_images(tmp_path):
    export(source(), "ilsvrc", tmp_path / "i", ExportOptions(include_images=False, withheld=frozenset()))
    assert (tmp_path / "i/ImageSets/DET/train_negative_images.txt").read_text() == "000000000003 3\n"
    assert "2 n02121808" in (tmp_path / "i/ImageSets/DET/train_blacklist.txt").read_text()
    # Image 2 shows two classes and is blacklisted: never classification truth.
    assert (tmp_path / "i/CLS-LOC/train_labels.txt").read_text() == ""


def test_statistics_count_what_the_export_holds():
    (stats,) = dataset_statistics(source())
    assert (stats.images, stats.labelled_images, stats.instances) == (4, 4, 3)
    assert stats.instances_per_class == {"dog": 2, "domestic cat": 1}
    assert stats.classes_per_image == {2: 2, 0: 2}
    assert stats.clutter() == pytest.approx(3 / 2)
    assert stats.mean_scale() == pytest.approx((0.25 + 0.18 + 0.02) / 3)
    assert stats.negative_pairs == 3 and stats.blacklisted_pairs == 1
    assert stats.scale_bins == [0, 1, 0, 1, 1, 0, 0]
    text = markdown("zoo", [stats])
    assert "| train | 4 | 4 | 3 | 2 |" in text and "ILSVRC 2014 DET train" in text


def test_withheld_splits_report_images_only():
    (stats,) = dataset_statistics(source(), withheld=("train",))
    assert stats.images == 4 and stats.instances == 0 and not stats.instances_per_class
    assert "labels withheld" in markdown("zoo", [stats], withheld=("train",))
