"""Original file names in exports: every manifest maps each image to its upload name, and COCO can call the
images by those names, made unique (shared names get the image id, case-insensitively), or refuses for the
formats whose per-image files are named after the images."""

from __future__ import annotations

import json
import zipfile

import pytest
from pycocotools.coco import COCO

from benchmark.exporters import ExportOptions, export
from benchmark.exporters.base import ExportBox, ExportCategory, ExportImage
from benchmark.exporters.file_names import OriginalNames, safe_base_name
from benchmark.exporters.memory import MemorySource

DOG = ExportCategory(11, "n02084071", "dog", "animal")


def source(names: list[tuple[int, str, str]]) -> MemorySource:
    images = [ExportImage(pk, f"{pk:012d}.jpg", 100, 80, split, original) for pk, split, original in names]
    boxes = [ExportBox(pk, pk, DOG.id, 1.0, 2.0, 30.0, 40.0) for pk, _, _ in names]
    return MemorySource(
        "named", [DOG], images, boxes, image_bytes={pk: f"img {pk}".encode() for pk, _, _ in names}
    )


UPLOADS = [
    (1, "train", "IMG_0001.jpg"),
    (2, "train", "cam2/IMG_0001.jpg"),  # the same name from another folder
    (3, "val", "img_0001.JPG"),  # the same name on a case-insensitive disk
    (4, "val", ""),  # no upload name kept
    (5, "train", "C:\\photos\\beach.png"),
]


def test_the_manifest_maps_every_image_to_its_upload_name(tmp_path):
    manifest = export(source(UPLOADS), "voc", tmp_path / "voc", ExportOptions(include_images=False))
    assert manifest["file_names"] == "id" and manifest["file_names_renamed"] == 0
    rows = {row["id"]: row for row in manifest["images"]}
    assert rows[2] == {
        "id": 2,
        "split": "train",
        "file_name": "000000000002.jpg",
        "original_name": "cam2/IMG_0001.jpg",
    }
    assert rows[4]["original_name"] == "" and rows[3]["split"] == "val"
    on_disk = json.loads((tmp_path / "voc" / "manifest.json").read_text())
    assert on_disk["images"] == manifest["images"]


def test_coco_with_original_names_disambiguates_shared_names_and_reads_in_pycocotools(tmp_path):
    out = tmp_path / "coco.zip"
    manifest = export(
        source(UPLOADS), "coco", out, ExportOptions(file_names="original", withheld=frozenset())
    )
    written = {row["id"]: row["file_name"] for row in manifest["images"]}
    assert written == {
        1: "IMG_0001.jpg",  # the first by split and id keeps the name
        2: "IMG_0001-2.jpg",
        5: "beach.png",  # folders dropped, Windows ones too
        3: "img_0001-3.JPG",
        4: "000000000004.jpg",  # nothing to keep: the id name
    }
    assert manifest["file_names"] == "original" and manifest["file_names_renamed"] == 3
    archive = zipfile.ZipFile(out)
    assert archive.read("images/train/IMG_0001-2.jpg") == b"img 2"
    assert archive.read("images/val/img_0001-3.JPG") == b"img 3"
    (tmp_path / "train.json").write_bytes(archive.read("annotations/instances_train.json"))
    coco = COCO(str(tmp_path / "train.json"))
    assert sorted(im["file_name"] for im in coco.loadImgs(coco.getImgIds())) == [
        "IMG_0001-2.jpg",
        "IMG_0001.jpg",
        "beach.png",
    ]
    assert len(coco.getAnnIds(imgIds=[2])) == 1  # boxes still point at the image id


def test_original_names_are_refused_for_formats_that_name_files_after_images(tmp_path):
    for name in ("voc", "yolo", "ilsvrc", "imagefolder"):
        with pytest.raises(ValueError, match="COCO|coco"):
            export(source(UPLOADS), name, tmp_path / name, ExportOptions(file_names="original"))
        assert not (tmp_path / name).exists()


def test_a_renamed_name_never_takes_a_name_an_upload_already_has():
    names = OriginalNames()
    assert names.name(1, "a.jpg", "000000000001.jpg") == "a.jpg"
    assert names.name(9, "a-2.jpg", "000000000009.jpg") == "a-2.jpg"
    assert names.name(2, "a.jpg", "000000000002.jpg") == "a-2-2.jpg"
    assert names.name(3, "README", "000000000003.jpg") == "README"
    assert names.name(4, "readme", "000000000004.jpg") == "readme-4"
    assert safe_base_name("dir/..") == "" and safe_base_name("x/\x00a.png") == "a.png"
