"""The pure checks of a predictions file (predictions/rows.py): every bad row is named with its place and code,
COCO's [x, y, w, h] becomes corners in original-image pixels, and images and classes resolve by id or name."""

from __future__ import annotations

import json

import pytest

from predictions import rows
from predictions.rows import Code

CATALOG = rows.Catalog(
    image_sizes={1: (100, 80), 2: (50, 50), 3: (50, 50)},
    images_by_name={"a.jpg": [1], "twin.jpg": [2, 3]},
    concepts_by_id={10: 10, 11: 11},
    concepts_by_wnid={"n01": 10, "n02": 11},
)


def det(**row):
    return {"image_id": 1, "category_id": 10, "bbox": [10, 20, 30, 40], "score": 0.9} | row


def check(detections=(), classifications=()):
    doc = rows.Document(detections=list(detections), classifications=list(classifications))
    return rows.predictions_validate(doc, CATALOG)


def problems(detections=(), classifications=()):
    with pytest.raises(rows.PredictionsRefused) as caught:
        check(detections, classifications)
    return [(p.where, p.code) for p in caught.value.problems]


def test_a_coco_box_becomes_corners_in_original_image_pixels():
    got = check([det()])
    assert got.boxes == [rows.BoxRow(1, 10, 10.0, 20.0, 40.0, 60.0, 0.9)]


def test_images_resolve_by_file_name_and_classes_by_wnid():
    got = check(
        [{"file_name": "a.jpg", "wnid": "n02", "bbox": [0, 0, 100, 80], "score": 1}],
        [{"file_name": "a.jpg", "wnid": "n01", "score": 0.25}],
    )
    assert got.boxes[0].image_id == 1 and got.boxes[0].concept_id == 11
    assert got.scores == [rows.ScoreRow(1, 10, 0.25)]


def test_unknown_image_and_class_are_named_by_row():
    assert problems([det(image_id=99), det(category_id=99), det(image_id=None, file_name="b.jpg")]) == [
        ("detections[0]", Code.UNKNOWN_IMAGE),
        ("detections[1]", Code.UNKNOWN_CLASS),
        ("detections[2]", Code.UNKNOWN_IMAGE),
    ]
    assert problems([], [{"image_id": 1, "wnid": "n99", "score": 0.5}]) == [
        ("classifications[0]", Code.UNKNOWN_CLASS)
    ]


def test_id_and_name_that_disagree_are_refused():
    bad = [
        det(image_id=2, file_name="a.jpg"),
        {"image_id": 1, "category_id": 10, "wnid": "n02", "bbox": [0, 0, 1, 1], "score": 0.1},
    ]
    assert problems(bad) == [("detections[0]", Code.UNKNOWN_IMAGE), ("detections[1]", Code.UNKNOWN_CLASS)]


def test_a_file_name_shared_by_two_images_needs_the_id():
    row = {"file_name": "twin.jpg", "category_id": 10, "bbox": [0, 0, 5, 5], "score": 0.5}
    assert problems([row]) == [("detections[0]", Code.AMBIGUOUS_IMAGE)]
    assert check([row | {"image_id": 3}]).boxes[0].image_id == 3


def test_non_finite_numbers_are_refused():
    bad = [det(score=float("nan")), det(bbox=[0, 0, float("inf"), 5])]
    assert problems(bad) == [("detections[0]", Code.NON_FINITE), ("detections[1]", Code.NON_FINITE)]
    assert problems([], [{"image_id": 1, "category_id": 10, "score": float("-inf")}]) == [
        ("classifications[0]", Code.NON_FINITE)
    ]


def test_boxes_reaching_outside_the_image_are_refused_and_the_whole_image_is_not():
    assert check([det(bbox=[0, 0, 100, 80])]).boxes[0].x2 == 100.0
    bad = [det(bbox=[-1, 0, 10, 10]), det(bbox=[0, 0, 100.5, 10]), det(bbox=[0, 70, 10, 11])]
    assert problems(bad) == [(f"detections[{i}]", Code.OUTSIDE_IMAGE) for i in range(3)]


def test_empty_boxes_and_scores_outside_0_1_are_refused():
    bad = [det(bbox=[0, 0, 0, 5]), det(score=1.5)]
    assert problems(bad) == [("detections[0]", Code.BAD_BOX), ("detections[1]", Code.BAD_SCORE)]


def test_duplicates_are_named_with_their_first_occurrence():
    with pytest.raises(rows.PredictionsRefused) as caught:
        check([det(), det(score=0.1)], [{"image_id": 1, "category_id": 10, "score": 0.2}] * 2)
    assert [(p.where, p.code) for p in caught.value.problems] == [
        ("detections[1]", Code.DUPLICATE),
        ("classifications[1]", Code.DUPLICATE),
    ]
    assert "detections[0]" in caught.value.problems[0].reason


def test_malformed_rows_name_the_key():
    bad = [[1, 2], {"image_id": 1, "category_id": 10, "score": 0.5}, det(image_id="1"), det(bbox=[1, 2, 3])]
    found = problems(bad)
    assert found == [(f"detections[{i}]", Code.BAD_ROW) for i in range(4)]


def test_every_problem_is_reported_not_only_the_first():
    with pytest.raises(rows.PredictionsRefused) as caught:
        check([det(image_id=99, category_id=99, score=2)])
    assert [p.code for p in caught.value.problems] == [Code.UNKNOWN_IMAGE, Code.UNKNOWN_CLASS, Code.BAD_SCORE]


def test_a_file_is_a_coco_list_or_an_object_of_known_keys():
    doc = rows.document_parse(
        json.dumps({"name": "r50", "model": {"name": "frcnn", "version": "2"}, "detections": []})
    )
    assert (doc.name, doc.model_name, doc.model_version) == ("r50", "frcnn", "2")
    assert rows.document_parse(b"[]").detections == []
    for bad in (b"{", b"3", b'{"detection": []}', b'{"detections": {}}'):
        with pytest.raises(rows.PredictionsRefused) as caught:
            rows.document_parse(bad)
        assert caught.value.problems[0].code == Code.BAD_FILE


def test_nan_in_the_file_reaches_its_row():
    doc = rows.document_parse(b'[{"image_id": 1, "category_id": 10, "bbox": [0, 0, 1, 1], "score": NaN}]')
    with pytest.raises(rows.PredictionsRefused) as caught:
        rows.predictions_validate(doc, CATALOG)
    assert [(p.where, p.code) for p in caught.value.problems] == [("detections[0]", Code.NON_FINITE)]


def test_an_empty_file_and_too_many_rows_are_refused(monkeypatch):
    with pytest.raises(rows.PredictionsRefused, match="no predictions"):
        check([])
    monkeypatch.setattr(rows, "MAX_ROWS", 2)
    with pytest.raises(rows.PredictionsRefused) as caught:
        check([det(), det(score=0.1), det(score=0.2)])
    assert caught.value.problems[0].code == Code.TOO_MANY_ROWS


def test_references_skip_values_no_column_could_hold():
    doc = rows.Document(
        detections=[{"image_id": 2**70, "file_name": "a\x00b", "category_id": True, "wnid": "\ud800"}, det()],
        classifications=[],
    )
    refs = rows.references(doc)
    assert (refs.image_ids, refs.file_names, refs.category_ids, refs.wnids) == ({1}, set(), {10}, set())
