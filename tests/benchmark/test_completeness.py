"""The export's completeness rule (pure): which images are written, and what the manifest counts per class."""

from __future__ import annotations

from benchmark.completeness import BoxReason, ImageReason, OpenWork, ProvisionalBox, assess

IMAGES = [(1, "train"), (2, "train"), (3, "val"), (4, "val"), (5, "test"), (6, "train")]
DOG, CAT = 10, 20


def run(include_provisional: bool = False, **overrides):
    facts = {
        "labelled": {1, 2, 3, 6},
        "gold": {4},
        "open_work": [
            OpenWork(2, DOG, ImageReason.BOX_JOB_OPEN),
            OpenWork(2, CAT, ImageReason.VERIFICATION_OPEN),
            OpenWork(3, None, ImageReason.LABELING_OPEN),
            OpenWork(99, DOG, ImageReason.BOX_JOB_OPEN),  # not in this export's images
        ],
        "provisional": [
            ProvisionalBox(100, 6, DOG, BoxReason.REVIEW_OPEN),
            ProvisionalBox(101, 6, DOG, BoxReason.OVERLAP_UNCHECKED),
            ProvisionalBox(102, 2, CAT, BoxReason.REVIEW_OPEN),
        ],
    }
    facts.update(overrides)
    return assess(IMAGES, include_provisional=include_provisional, **facts)


def test_unfinished_gold_unlabelled_and_not_final_images_are_left_out_with_reasons():
    result = run()
    assert result.left_out == {
        2: ("box_job_open", "boxes_not_final", "verification_open"),
        3: ("labeling_open",),
        4: ("gold",),
        5: ("unlabelled",),
        6: ("boxes_not_final",),
    }
    assert [i for i, _ in IMAGES if result.written(i)] == [1]


def test_per_class_counts_of_boxes_not_final_and_unfinished_images():
    body = run().as_dict({DOG: "dog", CAT: "cat"})
    assert body["labels"] == "final" and body["complete"] is False
    assert body["classes"]["dog"] == {
        "accepted_boxes_not_final": {"total": 2, "overlap_unchecked": 1, "review_open": 1},
        "images_unfinished": {"total": 2, "box_job_open": 1, "boxes_not_final": 1},
    }
    assert body["classes"]["cat"] == {
        "accepted_boxes_not_final": {"total": 1, "review_open": 1},
        "images_unfinished": {"total": 1, "boxes_not_final": 1, "verification_open": 1},
    }
    assert body["image_wide"] == {"gold": 1, "labeling_open": 1, "unlabelled": 1}
    left = body["images_left_out"]
    assert left["total"] == 5 and left["by_split"] == {"test": 1, "train": 2, "val": 2}
    assert left["images"][0] == {
        "image_id": 2,
        "split": "train",
        "reasons": ["box_job_open", "boxes_not_final", "verification_open"],
    }


def test_include_provisional_writes_images_whose_only_gap_is_boxes_not_final():
    result = run(include_provisional=True)
    assert result.written(6), "its accepted boxes are written as provisional"
    assert not result.written(2), "open work still keeps an image out"
    assert result.provisional_written == 2
    body = result.as_dict({})
    assert body["labels"] == "provisional"
    assert body["classes"][str(DOG)]["accepted_boxes_not_final"]["total"] == 2


def test_provisional_boxes_label_an_image_that_has_no_final_label_yet():
    result = run(
        include_provisional=True,
        labelled=set(),
        open_work=[],
        provisional=[ProvisionalBox(7, 1, DOG, BoxReason.OVERLAP_UNCHECKED)],
    )
    assert result.written(1)
    assert run(include_provisional=False, labelled=set(), open_work=[], provisional=[]).left_out[1] == (
        "unlabelled",
    )


def test_a_gold_image_the_pipelines_labelled_is_written_by_its_own_labels():
    result = run(gold={1, 4})
    assert result.written(1) and result.left_out[4] == ("gold",)


def test_a_complete_export_says_so():
    result = assess(
        [(1, "all")], labelled={1}, gold=set(), open_work=[], provisional=[], include_provisional=False
    )
    body = result.as_dict({})
    assert body["complete"] is True and body["images_left_out"]["total"] == 0 and body["classes"] == {}
