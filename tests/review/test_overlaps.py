"""Pair finding for the duplicate and cross-class review queues, checked against a brute-force double loop."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from review.overlaps import (
    BoxArrays,
    OverlapPairs,
    OverlapThresholds,
    PairKind,
    find_overlap_pairs,
    find_overlap_pairs_for_changed,
    validate_box,
)

Row = tuple[int, int, int, float, float, float, float]  # box_id, image_id, class_id, x1, y1, x2, y2


def make_boxes(rows: list[Row]) -> BoxArrays:
    cols = list(zip(*rows, strict=True)) if rows else [()] * 7
    return BoxArrays(*(np.array(c) for c in cols))  # type: ignore[arg-type]


def reference_iou(p: Row, q: Row) -> float:
    # Same arithmetic order as the vectorized code so thresholds compare identically.
    iw = max(0.0, min(p[5], q[5]) - max(p[3], q[3]))
    ih = max(0.0, min(p[6], q[6]) - max(p[4], q[4]))
    inter = iw * ih
    area_p = (p[5] - p[3]) * (p[6] - p[4])
    area_q = (q[5] - q[3]) * (q[6] - q[4])
    return inter / (area_p + area_q - inter)


def reference_pairs(rows: list[Row], t: OverlapThresholds) -> list[tuple[int, int, float, int, bool]]:
    out = []
    for p in rows:
        for q in rows:
            if p[1] != q[1] or p[0] >= q[0]:
                continue
            iou = reference_iou(p, q)
            if p[2] == q[2]:
                if iou > t.duplicate_iou:
                    out.append((p[0], q[0], iou, int(PairKind.DUPLICATE), False))
                continue
            confusable = (min(p[2], q[2]), max(p[2], q[2])) in t.confusable_pairs
            if iou > (t.confusable_iou if confusable else t.cross_class_iou):
                out.append((p[0], q[0], iou, int(PairKind.CROSS_CLASS), confusable))
    return sorted(out)


def as_tuples(pairs: OverlapPairs) -> list[tuple[int, int, float, int, bool]]:
    return list(
        zip(
            pairs.box_a.tolist(),
            pairs.box_b.tolist(),
            pairs.iou.tolist(),
            pairs.kind.tolist(),
            pairs.confusable.tolist(),
            strict=True,
        )
    )


# Coordinates on a small integer-and-half grid make identical, touching and nested boxes common.
coord = st.integers(min_value=0, max_value=16).map(lambda v: v / 2)


@st.composite
def box_rows(draw: st.DrawFn, max_boxes: int = 40) -> list[Row]:
    n = draw(st.integers(min_value=0, max_value=max_boxes))
    ids = draw(st.lists(st.integers(-1000, 10_000), min_size=n, max_size=n, unique=True))
    rows: list[Row] = []
    for box_id in ids:
        if rows and draw(st.integers(0, 4)) == 0:
            # Copy an earlier box's geometry, maybe to another class: identical boxes are a real case.
            src = draw(st.sampled_from(rows))
            rows.append((box_id, src[1], draw(st.integers(0, 3)), *src[3:]))
            continue
        x1, x2 = sorted(draw(st.lists(coord, min_size=2, max_size=2, unique=True)))
        y1, y2 = sorted(draw(st.lists(coord, min_size=2, max_size=2, unique=True)))
        rows.append((box_id, draw(st.integers(0, 3)), draw(st.integers(0, 3)), x1, y1, x2, y2))
    return rows


thresholds_strategy = st.builds(
    OverlapThresholds,
    duplicate_iou=st.sampled_from([0.0, 0.3, 0.5, 0.7]),
    cross_class_iou=st.sampled_from([0.0, 0.5, 0.6]),
    confusable_iou=st.sampled_from([0.1, 0.3]),
    confusable_pairs=st.frozensets(
        st.tuples(st.integers(0, 3), st.integers(0, 3)).filter(lambda p: p[0] != p[1]), max_size=3
    ),
)


@settings(max_examples=150, deadline=None)
@given(rows=box_rows(), thresholds=thresholds_strategy)
def test_vectorized_scan_matches_brute_force_double_loop(
    rows: list[Row], thresholds: OverlapThresholds
) -> None:
    found = find_overlap_pairs(make_boxes(rows), thresholds)
    assert as_tuples(found) == reference_pairs(rows, thresholds)


@settings(max_examples=100, deadline=None)
@given(rows=box_rows(), thresholds=thresholds_strategy, data=st.data())
def test_incremental_recheck_equals_full_scan_restricted_to_changed_boxes(
    rows: list[Row], thresholds: OverlapThresholds, data: st.DataObject
) -> None:
    ids = [r[0] for r in rows]
    changed = data.draw(st.lists(st.sampled_from(ids), max_size=5) if ids else st.just([]))
    changed += data.draw(st.lists(st.integers(20_000, 20_010), max_size=2))  # ids no longer present
    boxes = make_boxes(rows)
    expected = [
        p for p in as_tuples(find_overlap_pairs(boxes, thresholds)) if p[0] in changed or p[1] in changed
    ]
    assert as_tuples(find_overlap_pairs_for_changed(boxes, changed, thresholds)) == expected


def test_incremental_recheck_scans_only_images_holding_a_changed_box() -> None:
    # Image 2 holds a duplicate pair but no changed box, so it must not appear.
    rows: list[Row] = [
        (1, 1, 0, 0, 0, 10, 10),
        (2, 1, 0, 0, 0, 10, 9),
        (3, 2, 0, 0, 0, 10, 10),
        (4, 2, 0, 0, 0, 10, 10),
    ]
    found = find_overlap_pairs_for_changed(make_boxes(rows), [2])
    assert as_tuples(found) == [(1, 2, 0.9, int(PairKind.DUPLICATE), False)]


def test_identical_boxes_have_iou_one_and_are_a_duplicate_pair() -> None:
    found = find_overlap_pairs(make_boxes([(7, 1, 3, 1.5, 2, 40, 30), (5, 1, 3, 1.5, 2, 40, 30)]))
    assert as_tuples(found) == [(5, 7, 1.0, int(PairKind.DUPLICATE), False)]


def test_boxes_sharing_an_edge_or_corner_do_not_overlap_even_at_threshold_zero() -> None:
    t = OverlapThresholds(duplicate_iou=0.0, cross_class_iou=0.0, confusable_iou=0.0)
    rows: list[Row] = [
        (1, 1, 0, 0, 0, 10, 10),
        (2, 1, 0, 10, 0, 20, 10),  # shares the right edge of box 1
        (3, 1, 1, 0, 10, 10, 20),  # shares the bottom edge of box 1
        (4, 1, 0, 10, 10, 20, 20),  # shares only a corner
    ]
    assert len(find_overlap_pairs(make_boxes(rows), t)) == 0


def test_threshold_is_strict_so_iou_exactly_half_is_not_queued() -> None:
    rows: list[Row] = [(1, 1, 0, 0, 0, 10, 10), (2, 1, 0, 0, 0, 10, 5)]  # IoU exactly 0.5
    assert len(find_overlap_pairs(make_boxes(rows))) == 0
    assert len(find_overlap_pairs(make_boxes(rows), OverlapThresholds(duplicate_iou=0.49))) == 1


def test_boxes_on_different_images_never_pair() -> None:
    rows: list[Row] = [(1, 1, 0, 0, 0, 10, 10), (2, 2, 0, 0, 0, 10, 10), (3, 3, 1, 0, 0, 10, 10)]
    assert len(find_overlap_pairs(make_boxes(rows))) == 0


def test_same_class_overlap_is_duplicate_and_other_class_overlap_is_cross_class() -> None:
    rows: list[Row] = [(1, 1, 0, 0, 0, 10, 10), (2, 1, 0, 0, 0, 10, 8), (3, 1, 9, 0, 0, 10, 7)]
    found = find_overlap_pairs(make_boxes(rows))
    assert as_tuples(found) == [
        (1, 2, 0.8, int(PairKind.DUPLICATE), False),
        (1, 3, 0.7, int(PairKind.CROSS_CLASS), False),
        (2, 3, 0.875, int(PairKind.CROSS_CLASS), False),
    ]
    assert found.of_kind(PairKind.DUPLICATE).box_b.tolist() == [2]


def test_confusable_classes_are_queued_at_the_lower_threshold_in_either_order() -> None:
    seal, otter, dog = 10, 20, 30
    rows: list[Row] = [(1, 1, otter, 0, 0, 10, 10), (2, 1, seal, 0, 0, 10, 4), (3, 1, dog, 0, 6, 10, 10)]
    plain = find_overlap_pairs(make_boxes(rows))
    assert len(plain) == 0  # IoU 0.4 is below the default cross-class threshold
    t = OverlapThresholds(confusable_pairs=frozenset({(otter, seal)}))  # given in reverse order
    found = find_overlap_pairs(make_boxes(rows), t)
    assert as_tuples(found) == [(1, 2, 0.4, int(PairKind.CROSS_CLASS), True)]  # dog/otter (0.4) is not listed


def test_confusable_pair_above_the_normal_threshold_is_still_marked_confusable() -> None:
    rows: list[Row] = [(1, 1, 1, 0, 0, 10, 10), (2, 1, 2, 0, 0, 10, 10)]
    found = find_overlap_pairs(make_boxes(rows), OverlapThresholds(confusable_pairs=frozenset({(1, 2)})))
    assert found.confusable.tolist() == [True]


def test_confusable_pairs_with_classes_absent_from_the_scan_are_ignored() -> None:
    rows: list[Row] = [(1, 1, 5, 0, 0, 10, 10), (2, 1, 6, 0, 0, 10, 4)]
    t = OverlapThresholds(confusable_pairs=frozenset({(5, 99), (-3, 6), (6, 1000)}))
    assert len(find_overlap_pairs(make_boxes(rows), t)) == 0


def test_empty_and_single_box_inputs_give_no_pairs() -> None:
    assert len(find_overlap_pairs(make_boxes([]))) == 0
    assert len(find_overlap_pairs(make_boxes([(1, 1, 0, 0, 0, 1, 1)]))) == 0
    assert len(find_overlap_pairs_for_changed(make_boxes([(1, 1, 0, 0, 0, 1, 1)]), [])) == 0


def test_scan_refuses_zero_area_non_finite_and_repeated_boxes() -> None:
    with pytest.raises(ValueError, match="zero or negative area"):
        make_boxes([(1, 1, 0, 0, 0, 0, 10)])
    with pytest.raises(ValueError, match="zero or negative area"):
        make_boxes([(1, 1, 0, 5, 5, 6, 4)])
    with pytest.raises(ValueError, match="non-finite"):
        make_boxes([(1, 1, 0, 0, 0, math.nan, 10)])
    with pytest.raises(ValueError, match="unique"):
        make_boxes([(1, 1, 0, 0, 0, 1, 1), (1, 2, 0, 0, 0, 1, 1)])


def test_scan_refuses_columns_of_different_lengths() -> None:
    with pytest.raises(ValueError, match="same length"):
        BoxArrays(
            box_id=np.array([1, 2]),
            image_id=np.array([1]),
            class_id=np.array([0, 0]),
            x1=np.zeros(2),
            y1=np.zeros(2),
            x2=np.ones(2),
            y2=np.ones(2),
        )


def test_thresholds_refuse_out_of_range_values_and_self_pairs() -> None:
    with pytest.raises(ValueError, match="duplicate_iou"):
        OverlapThresholds(duplicate_iou=1.0)
    with pytest.raises(ValueError, match="confusable_iou"):
        OverlapThresholds(confusable_iou=-0.1)
    with pytest.raises(ValueError, match="two different classes"):
        OverlapThresholds(confusable_pairs=frozenset({(3, 3)}))


def test_validate_box_accepts_a_box_touching_the_image_border() -> None:
    validate_box(0, 0, 640, 480, 640, 480)


@pytest.mark.parametrize(
    ("box", "message"),
    [
        ((10, 10, 10, 20), "zero or negative area"),
        ((10, 10, 20, 10), "zero or negative area"),
        ((20, 10, 10, 20), "zero or negative area"),
        ((math.nan, 10, 20, 20), "x1 must be a finite number"),
        ((0, 0, math.inf, 20), "x2 must be a finite number"),
        ((-1, 0, 20, 20), "outside the 640 x 480 image"),
        ((0, 0, 641, 20), "outside the 640 x 480 image"),
        ((0, 0, 20, 480.5), "outside the 640 x 480 image"),
    ],
)
def test_validate_box_refuses_degenerate_non_finite_and_out_of_image_boxes(
    box: tuple[float, float, float, float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        validate_box(*box, 640, 480)


def test_validate_box_refuses_a_non_positive_image_size() -> None:
    with pytest.raises(ValueError, match="image size must be positive"):
        validate_box(0, 0, 1, 1, 0, 480)
