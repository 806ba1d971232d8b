"""The benchmark's class rules on hand-made data (no database): ancestor conflicts, the object-area rule,
per-class statistics, basic-level merging with its to-do list, and verified negatives."""

from __future__ import annotations

import pytest

from benchmark.class_selection import (
    BoxFact,
    ClassSelectionError,
    ImageVerdicts,
    ancestor_conflicts,
    basic_level_map,
    class_statistics,
    merge_todo,
    merged_verdicts,
    negatives,
    select_classes,
)

# animal(1) -> dog(2) -> dalmatian(3), beagle(4); animal -> cat(5); vehicle(6) -> car(7)
PARENTS = {2: [1], 3: [2], 4: [2], 5: [1], 7: [6]}
NAMES = {1: "animal", 2: "dog", 3: "dalmatian", 4: "beagle", 5: "cat", 6: "vehicle", 7: "car"}


def box(image, concept, x1, y1, x2, y2, w=100, h=100):
    return BoxFact(image, concept, x1, y1, x2, y2, w, h)


def test_statistics_count_instances_images_and_mean_scale_per_class():
    stats = class_statistics(
        [box(1, 3, 0, 0, 10, 10), box(1, 3, 0, 0, 20, 10), box(2, 3, 0, 0, 10, 30), box(2, 7, 0, 0, 100, 80)],
        class_ids=[5],
    )
    assert stats[3].instances == 3 and stats[3].images == 2
    assert stats[3].mean_area_share == pytest.approx((0.01 + 0.02 + 0.03) / 3)
    assert stats[3].median_area_share == pytest.approx(0.02)
    assert stats[7].mean_area_share == pytest.approx(0.8)
    assert stats[5].instances == 0 and stats[5].images == 0  # a class without boxes is listed with zeros


def test_an_ancestor_and_its_descendant_are_refused_naming_both():
    assert ancestor_conflicts([2, 3, 7], PARENTS) == [(2, 3)]
    assert ancestor_conflicts([1, 4], PARENTS) == [(1, 4)]  # grand-parents count too
    with pytest.raises(ClassSelectionError) as err:
        select_classes([2, 3, 7], {}, PARENTS, NAMES)
    assert "dog is an ancestor of dalmatian" in str(err.value)


def test_classes_whose_objects_fill_most_of_the_image_are_dropped_with_the_reason():
    stats = class_statistics([box(1, 7, 0, 0, 100, 60), box(2, 3, 0, 0, 10, 10), box(3, 5, 0, 0, 80, 70)])
    selection = select_classes([3, 5, 7], stats, PARENTS, NAMES, max_area_share=0.5)
    assert selection.kept == (3,)
    assert set(selection.dropped) == {5, 7}
    assert "60%" in selection.dropped[7] and "over 50%" in selection.dropped[7]
    # The rule is the organizer's: with no area limit every class stays.
    assert select_classes([3, 5, 7], stats, PARENTS, NAMES, max_area_share=None).kept == (3, 5, 7)


def test_minimum_instances_and_bad_thresholds():
    stats = class_statistics([box(1, 3, 0, 0, 10, 10)], class_ids=[5])
    assert select_classes([3, 5], stats, PARENTS, NAMES, min_instances=1).dropped == {
        5: "0 instances (fewer than 1)"
    }
    with pytest.raises(ClassSelectionError, match="max_area_share"):
        select_classes([3], stats, PARENTS, NAMES, max_area_share=1.5)


def test_basic_level_map_sends_breeds_to_dog_and_refuses_a_class_below_two_basic_ones():
    assert basic_level_map([2, 7], [3, 4, 5, 7], PARENTS) == {2: 2, 3: 2, 4: 2, 7: 7}
    with pytest.raises(ClassSelectionError, match="several basic-level"):
        basic_level_map([2, 6], [3], {3: [2, 6]})


def test_merge_to_do_lists_images_with_only_some_breeds_boxed():
    mapping = {2: 2, 3: 2, 4: 2}
    todo = merge_todo(
        mapping,
        boxed={10: {3}, 11: {3, 4}, 12: {4}, 14: {3}},
        verdicts={
            10: {3: True},  # only dalmatians boxed: every other dog owed
            11: {3: True, 4: True, 2: False},  # both breeds boxed and "dog" itself absent: exhaustive
            12: {4: True, 3: False, 2: False},  # beagles boxed, no dalmatian, no other dog: exhaustive
            13: {3: False, 4: False},  # no dog at all: nothing owed
            14: {3: True, 4: False},  # dalmatians boxed, no beagle, other dogs unknown: owed
        },
    )
    assert [t.as_dict() for t in todo] == [
        {"image": 10, "class": 2, "boxed": [3], "owed": [2, 4]},
        {"image": 14, "class": 2, "boxed": [3], "owed": [2]},
    ]


def test_a_verified_but_unboxed_breed_is_owed_too():
    todo = merge_todo({2: 2, 3: 2}, boxed={}, verdicts={5: {3: True, 2: False}})
    assert [(t.image_id, t.owed) for t in todo] == [(5, (3,))]


def test_merged_verdicts_need_every_member_absent_for_a_negative():
    mapping = {2: 2, 3: 2, 4: 2, 7: 7}
    one_no = merged_verdicts(1, {3: False}, [], mapping)
    assert 2 not in one_no.absent  # a "no" for dalmatian says nothing about other dogs
    all_no = merged_verdicts(2, {2: False, 3: False, 4: False, 7: False}, [], mapping)
    assert all_no.absent == {2, 7}
    boxed = merged_verdicts(3, {3: True, 2: False, 4: False}, [3], mapping)
    assert boxed.present == {2} and boxed.boxed == {2} and 2 not in boxed.absent


def test_negatives_never_contain_a_positive_box_and_negative_images_are_absent_for_every_class():
    images = [
        ImageVerdicts(1, frozenset(), frozenset({2, 7}), frozenset()),  # re-verified negative image
        ImageVerdicts(2, frozenset(), frozenset({2}), frozenset()),  # absent for dog, car undecided
        ImageVerdicts(3, frozenset({7}), frozenset({2, 7}), frozenset({7})),  # a car box beats "absent"
        ImageVerdicts(4, frozenset({7}), frozenset({2}), frozenset({7})),
    ]
    report = negatives(images, [2, 7])
    assert report.negative_images == (1,)
    assert report.per_class == {2: 4, 7: 1}
    assert report.undecided == {2: (7,)}  # needs a car verification before it is a negative image
    boxed = {i.image_id: i.boxed for i in images}
    assert 7 not in boxed[1] and all(not boxed[i] for i in report.negative_images)


def test_statistics_read_boxes_in_image_order_and_say_so_when_they_are_not():
    # Images are counted as the image id changes: one image's boxes of a class count it once.
    stats = class_statistics([box(1, 3, 0, 0, 10, 10), box(1, 7, 0, 0, 10, 10), box(1, 3, 0, 0, 5, 5)])
    assert stats[3].instances == 2 and stats[3].images == 1
    with pytest.raises(ValueError, match="ordered by image id: image 1 after image 2"):
        class_statistics([box(2, 3, 0, 0, 10, 10), box(1, 3, 0, 0, 10, 10)])
