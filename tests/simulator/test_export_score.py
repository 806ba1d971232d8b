"""Scoring exported archives against the ground truth: a perfect export scores 1.0, a missing box lowers
coverage (small objects apart), a junk box lowers precision, and ILSVRC lists give positives and negatives."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

from simulator.export_score import missing_categories, read_coco, read_ilsvrc, score_instances, truth_boxes

TRUTH = {
    7: {"cat": np.array([[10.0, 10.0, 110.0, 90.0], [200.0, 50.0, 215.0, 62.0]])},  # one big, one small
    8: {"dog": np.array([[0.0, 0.0, 50.0, 60.0]])},
}
CATEGORIES = [{"id": 3, "name": "cat", "wnid": "cat"}, {"id": 4, "name": "dog", "wnid": "dog"}]


def zip_of(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return buf.getvalue()


def coco_archive(boxes: list[tuple[int, int, list[float]]], split: str = "train") -> bytes:
    annotations = [
        {"id": i, "image_id": image, "category_id": cat, "bbox": [x1, y1, x2 - x1, y2 - y1]}
        for i, (image, cat, (x1, y1, x2, y2)) in enumerate(boxes, start=1)
    ]
    data = {"images": [{"id": 7}, {"id": 8}], "annotations": annotations, "categories": CATEGORIES}
    return zip_of({f"annotations/instances_{split}.json": json.dumps(data), "manifest.json": "{}"})


def perfect_boxes():
    return [(7, 3, list(b)) for b in TRUTH[7]["cat"]] + [(8, 4, list(TRUTH[8]["dog"][0]))]


def test_a_perfect_export_scores_full_coverage_and_precision():
    score = score_instances(truth_boxes(TRUTH), read_coco(coco_archive(perfect_boxes())).boxes)
    assert (score.coverage, score.small_coverage, score.precision) == (1.0, 1.0, 1.0)
    assert (score.true_instances, score.small_instances, score.exported_boxes) == (3, 1, 3)


def test_a_missing_small_box_lowers_coverage_and_small_coverage_but_not_precision():
    boxes = [b for b in perfect_boxes() if b[2][0] != 200.0]
    score = score_instances(truth_boxes(TRUTH), read_coco(coco_archive(boxes)).boxes)
    assert score.coverage == pytest.approx(2 / 3)
    assert score.small_coverage == 0.0
    assert score.precision == 1.0


def test_a_junk_box_and_a_duplicate_lower_precision_only():
    boxes = perfect_boxes() + [(8, 4, [300.0, 300.0, 340.0, 340.0]), (8, 4, [1.0, 1.0, 50.0, 60.0])]
    score = score_instances(truth_boxes(TRUTH), read_coco(coco_archive(boxes)).boxes)
    assert score.coverage == 1.0
    assert score.precision == pytest.approx(3 / 5)


def test_a_box_of_the_wrong_class_covers_nothing():
    boxes = [(7, 4, list(b)) for b in TRUTH[7]["cat"]] + [(8, 4, list(TRUTH[8]["dog"][0]))]
    score = score_instances(truth_boxes(TRUTH), read_coco(coco_archive(boxes)).boxes)
    assert score.coverage == pytest.approx(1 / 3)


def test_coco_reader_reads_every_split_and_the_categories():
    a = read_coco(coco_archive(perfect_boxes()[:2], "train"))
    assert a.categories == {"cat", "dog"}
    assert a.positives == {(7, "cat")}
    assert len(a.boxes[(7, "cat")]) == 2
    assert missing_categories(["cat", "dog", "bird"], a) == ["bird"]


def test_ilsvrc_reader_maps_stems_to_image_ids_and_reads_positives_partials_and_negatives():
    archive = zip_of(
        {
            "classes.txt": "3 cat cat\n4 dog dog\n",
            "ImageSets/train.txt": "00000007 7\n00000008 8\n",
            "ImageSets/DET/train_cat.txt": "00000007 1\n00000008 -1\n",
            "ImageSets/DET/train_dog.txt": "00000008 0\n",
            "ImageSets/DET/train_blacklist.txt": "8 dog\n",
        }
    )
    labels = read_ilsvrc(archive)
    assert labels.positives == {(7, "cat"), (8, "dog")}
    assert labels.negatives == {(8, "cat")}
    assert labels.categories == {"cat", "dog"}
    assert labels.images == {7, 8}


def test_ilsvrc_reader_counts_an_undecided_pair_as_no_label():
    # A 0 the blacklist does not name is a pair nobody decided (an image held out as gold): no label at all.
    archive = zip_of(
        {
            "classes.txt": "3 cat cat\n",
            "ImageSets/train.txt": "00000007 7\n00000009 9\n",
            "ImageSets/DET/train_cat.txt": "00000007 1\n00000009 0\n",
            "ImageSets/DET/train_blacklist.txt": "",
        }
    )
    labels = read_ilsvrc(archive)
    assert labels.positives == {(7, "cat")}
    assert labels.negatives == set()


def test_ilsvrc_reader_does_not_read_the_negative_images_list_as_a_class():
    # `stem image_id` lines: an image verified absent for every class, not a positive of a class "negative_images".
    archive = zip_of(
        {
            "classes.txt": "3 cat cat\n",
            "ImageSets/train.txt": "00000007 7\n00000020 20\n",
            "ImageSets/DET/train_cat.txt": "00000007 1\n00000020 -1\n",
            "ImageSets/DET/train_negative_images.txt": "00000020 20\n",
            "ImageSets/DET/train_blacklist.txt": "",
        }
    )
    labels = read_ilsvrc(archive)
    assert labels.positives == {(7, "cat")}
    assert labels.negatives == {(20, "cat")}
