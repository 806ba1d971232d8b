"""Malformed submissions are refused with the entry or line number and the reason."""

import pytest

from benchmark.metrics.submissions import (
    SubmissionError,
    parse_coco_results,
    read_ilsvrc_cls,
    read_ilsvrc_det,
    read_ilsvrc_loc,
    validate_coco_results,
)

GOOD = {"image_id": 1, "category_id": 2, "bbox": [1.0, 2.0, 3.0, 4.0], "score": 0.5}


def problems_of(call, *args, **kwargs):
    with pytest.raises(SubmissionError) as info:
        call(*args, **kwargs)
    return [str(p) for p in info.value.problems], str(info.value)


def test_every_malformed_coco_entry_is_listed_with_its_index_and_reason():
    entries = [
        GOOD,
        {"image_id": 1, "bbox": [0, 0, 1, 1]},
        {**GOOD, "image_id": 42},
        {**GOOD, "category_id": 9},
        {**GOOD, "score": float("nan")},
        {**GOOD, "bbox": [0, 0, 0, 5]},
        {**GOOD, "bbox": [120, 0, 20, 5]},  # wholly outside: scored as given, as pycocotools scores it
        {**GOOD, "bbox": [0, 0, 1]},
        {**GOOD, "image_id": "1"},
        "not an object",
        {**GOOD, "bbox": [0, float("inf"), 1, 1]},
    ]
    problems, message = problems_of(
        validate_coco_results, entries, image_ids={1}, category_ids={2}, image_sizes={1: (100, 50)}
    )
    assert problems == [
        "entry 1: missing key(s) 'category_id', 'score'",
        "entry 2: unknown image_id 42",
        "entry 3: unknown category_id 9",
        "entry 4: score must be a finite number, got nan",
        "entry 5: bbox width and height must be positive, got w=0, h=5",
        "entry 7: bbox must be a list of 4 numbers [x, y, w, h], got [0, 0, 1]",
        "entry 8: image_id must be an integer, got '1'",
        "entry 9: expected an object, got str",
        "entry 10: bbox has a non-finite number: [0, inf, 1, 1]",
    ]
    assert message.startswith("9 problem(s) in the submission:\nentry 1:")


def test_valid_coco_results_become_detections():
    dets = validate_coco_results([GOOD, {**GOOD, "score": 1}], image_ids={1}, image_sizes={1: (10, 10)})
    assert dets.scores.tolist() == [0.5, 1.0]
    assert dets.boxes.tolist()[0] == [1.0, 2.0, 3.0, 4.0]


def test_coco_json_syntax_errors_carry_the_line_number():
    problems, _ = problems_of(parse_coco_results, '[\n {"image_id": 1,\n  "bbox": ]\n]')
    assert problems[0].startswith("line 3: invalid JSON")
    problems, _ = problems_of(parse_coco_results, '{"image_id": 1}')
    assert problems == ["file: a COCO results file holds a JSON list of detections"]


def test_ilsvrc_classification_lines_are_checked_with_line_numbers():
    text = "1 3 4 5 6 7\n\n2 3 4 5 6 7 8\nx 1\n2 1\n1 2\n3 99\n4\n"
    problems, _ = problems_of(read_ilsvrc_cls, text, image_ids={1, 2, 3}, labels=range(1, 10))
    assert problems == [
        "line 3: expected 'image_id label1 ... label5' with 1 to 5 guesses, got 7 fields",
        "line 4: image_id must be an integer, got 'x'",
        "line 6: image_id 1 already given on line 1",
        "line 7: unknown label 99",
        "line 8: expected 'image_id label1 ... label5' with 1 to 5 guesses, got 1 fields",
    ]


def test_ilsvrc_classification_pads_short_guess_lists():
    pred = read_ilsvrc_cls("1 3 4\n2 5 6 7 8 9\n", image_ids={1, 2})
    assert pred.labels.tolist() == [[3, 4, -1, -1, -1], [5, 6, 7, 8, 9]]


def test_ilsvrc_detection_lines_are_checked_with_line_numbers():
    text = "\n".join(
        [
            "1 2 0.9 0 0 10 10",
            "1 2 0.9 0 0 10",
            "7 2 0.9 0 0 10 10",
            "1 5 0.9 0 0 10 10",
            "1 2 nan 0 0 10 10",
            "1 2 0.9 10 0 5 10",
            "1 2 0.9 200 0 500 10",  # wholly outside: scored as given, as the devkit scores it
        ]
    )
    problems, _ = problems_of(read_ilsvrc_det, text, image_ids={1}, labels={2}, image_sizes={1: (100, 100)})
    assert problems == [
        "line 2: expected 'image_id class_id score x1 y1 x2 y2' (7 fields), got 6",
        "line 3: unknown image_id 7",
        "line 4: unknown class_id 5",
        "line 5: score and coordinates must be finite numbers, got ['nan', '0', '0', '10', '10']",
        "line 6: box must have x1 <= x2 and y1 <= y2, got ['10', '0', '5', '10']",
    ]


def test_ilsvrc_detection_boxes_are_stored_as_corner_and_extent():
    dets = read_ilsvrc_det("3 2 0.5 10 20 30 60\n")
    assert dets.boxes.tolist() == [[10, 20, 20, 40]]
    assert dets.image.tolist() == [3] and dets.category.tolist() == [2]


def test_ilsvrc_localization_lines_need_five_fields_per_guess():
    problems, _ = problems_of(read_ilsvrc_loc, "1 3 0 0 5 5 4 0 0 5\n", image_ids={1})
    assert problems[0].startswith("line 1: expected 'image_id label x1 y1 x2 y2 ...'")
    pred = read_ilsvrc_loc("1 3 0 0 5 5 4 1 1 2 2\n", image_ids={1})
    assert pred.labels[0, :2].tolist() == [3, 4]
    assert pred.boxes is not None and pred.boxes[0, 1].tolist() == [1, 1, 1, 1]


def test_coco_boxes_past_the_border_are_kept_as_given_and_counted():
    entries = [
        {**GOOD, "bbox": [90.0, 0.0, 12.0, 5.0]},  # 2 px past the right border of a 100x50 image
        {**GOOD, "bbox": [-3.0, 45.0, 10.0, 10.0]},  # past the left and bottom borders
        {**GOOD, "bbox": [120.0, 0.0, 5.0, 5.0]},  # wholly outside
        GOOD,
    ]
    dets = validate_coco_results(entries, image_ids={1}, image_sizes={1: (100, 50)})
    assert dets.boxes.tolist() == [
        [90.0, 0.0, 12.0, 5.0],
        [-3.0, 45.0, 10.0, 10.0],
        [120, 0, 5, 5],
        [1, 2, 3, 4],
    ]
    assert (dets.past_border, dets.outside) == (3, 1)


def test_boxes_are_not_counted_against_an_unknown_image_size():
    dets = validate_coco_results([{**GOOD, "bbox": [-5.0, -5.0, 500.0, 500.0]}], image_sizes={})
    assert (dets.past_border, dets.outside) == (0, 0)


def test_ilsvrc_detection_and_localization_boxes_past_the_border_are_kept_as_given_and_counted():
    dets = read_ilsvrc_det("1 2 0.9 0 0 102 10\n1 2 0.8 1 1 5 5\n", image_sizes={1: (100, 100)})
    assert dets.boxes.tolist() == [[0, 0, 102, 10], [1, 1, 4, 4]]
    assert (dets.past_border, dets.outside) == (1, 0)
    pred = read_ilsvrc_loc("1 3 -2 0 5 5\n", image_ids={1}, image_sizes={1: (100, 100)})
    assert pred.boxes is not None and pred.boxes[0, 0].tolist() == [-2, 0, 7, 5]
    assert (pred.past_border, pred.outside) == (1, 0)
