"""Exports read by the tools everybody else uses: pycocotools and CVAT's dataset framework (datumaro) load our
COCO, VOC and YOLO exports and find exactly the platform's final boxes and classes."""

from __future__ import annotations

import io
import json
import logging

import pytest
from django.core.files.base import ContentFile
from django.core.management import call_command

from annotation.models import FinalBox
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


def test_pycocotools_reads_the_coco_export_with_segmentations_and_supercategories(labelled, tmp_path):
    from pycocotools.coco import COCO

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
    for a in anns:
        mask = coco.annToMask(a)  # the one-polygon segmentation rasterizes to the box
        x, y, w, h = a["bbox"]
        assert mask.sum() == pytest.approx(w * h, rel=0.1)
        assert len(a["segmentation"]) == 1 and len(a["segmentation"][0]) == 8


def datumaro_boxes(path, fmt: str) -> list[tuple[int, str, tuple[float, float, float, float]]]:
    from datumaro.components.annotation import AnnotationType, Bbox
    from datumaro.components.dataset import Dataset as DmDataset

    data = DmDataset.import_from(str(path), fmt)
    labels = data.categories()[AnnotationType.label]
    out = []
    for item in data:
        image_id = int(item.id.rsplit("/", 1)[-1])
        for ann in item.annotations:
            if isinstance(ann, Bbox):
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
