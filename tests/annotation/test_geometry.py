import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.geometry import (
    Box,
    BoxError,
    accurate_fraction,
    as_boxes,
    best_iou,
    coverage_fraction,
    differs_by_at_least,
    greedy_match,
    iou,
    iou_matrix,
    is_fully_covered,
    validate_box,
)

# --- IoU hand cases -------------------------------------------------------------------------------------


def test_iou_of_identical_boxes_is_one():
    assert iou((10, 20, 50, 80), (10, 20, 50, 80)) == 1.0


def test_iou_of_disjoint_boxes_is_zero():
    assert iou((0, 0, 10, 10), (20, 20, 30, 30)) == 0.0


def test_iou_of_boxes_touching_along_an_edge_or_corner_is_zero():
    assert iou((0, 0, 10, 10), (10, 0, 20, 10)) == 0.0
    assert iou((0, 0, 10, 10), (10, 10, 20, 20)) == 0.0


def test_iou_of_contained_box_is_area_ratio():
    assert iou((0, 0, 10, 10), (2, 2, 7, 7)) == pytest.approx(25 / 100)


def test_iou_of_half_overlapping_boxes_uses_continuous_areas():
    # intersection 5x10 = 50, union 100 + 100 - 50 = 150 (no +1 pixel convention)
    assert iou((0, 0, 10, 10), (5, 0, 15, 10)) == pytest.approx(50 / 150)


def test_iou_is_symmetric_and_accepts_box_objects():
    a, b = Box(0, 0, 10, 10), Box(3, 4, 12, 9)
    assert iou(a, b) == iou(b, a)
    assert iou(a, b) == iou(a.as_tuple(), b.as_array())


def test_iou_of_degenerate_boxes_is_zero_not_nan():
    assert iou((5, 5, 5, 5), (5, 5, 5, 5)) == 0.0
    assert iou_matrix([(5, 5, 5, 5)], [(5, 5, 5, 5)])[0, 0] == 0.0


def test_iou_matrix_shape_and_hand_values():
    a = [(0, 0, 10, 10), (100, 100, 110, 110)]
    b = [(0, 0, 10, 10), (5, 0, 15, 10), (50, 50, 60, 60)]
    m = iou_matrix(a, b)
    assert m.shape == (2, 3)
    np.testing.assert_allclose(m, [[1.0, 50 / 150, 0.0], [0.0, 0.0, 0.0]])


def test_iou_matrix_with_no_boxes_on_either_side_is_empty():
    assert iou_matrix([], [(0, 0, 1, 1)]).shape == (0, 1)
    assert iou_matrix(np.zeros((3, 4)), []).shape == (3, 0)


def test_as_boxes_rejects_wrong_shape():
    with pytest.raises(BoxError):
        as_boxes(np.zeros((3, 3)))
    with pytest.raises(BoxError):
        as_boxes([(1, 2, 3)])


coord = st.floats(min_value=0, max_value=200, allow_nan=False, width=32)


@st.composite
def boxes(draw, max_n=6):
    n = draw(st.integers(0, max_n))
    out = []
    for _ in range(n):
        x1, x2 = sorted((draw(coord), draw(coord)))
        y1, y2 = sorted((draw(coord), draw(coord)))
        out.append((x1, y1, x2, y2))
    return out


@settings(max_examples=200, deadline=None)
@given(boxes(), boxes())
def test_iou_matrix_matches_scalar_loop(a, b):
    m = iou_matrix(a, b)
    expected = np.array([[iou(x, y) for y in b] for x in a]).reshape(len(a), len(b))
    np.testing.assert_allclose(m, expected, rtol=1e-12, atol=1e-12)
    assert np.all((m >= 0) & (m <= 1))


# --- validate_box ---------------------------------------------------------------------------------------


def test_validate_box_returns_box_for_a_valid_draw():
    assert validate_box(1, 2, 30, 40, width=100, height=50) == Box(1.0, 2.0, 30.0, 40.0)


def test_validate_box_accepts_the_whole_image():
    assert validate_box(0, 0, 640, 480, 640, 480).area == 640 * 480


@pytest.mark.parametrize(
    "coords, message",
    [
        ((math.nan, 0, 10, 10), "x1 must be a finite number"),
        ((0, 0, math.inf, 10), "x2 must be a finite number"),
        ((0, -math.inf, 10, 10), "y1 must be a finite number"),
        ((0, 0, 10, "abc"), "y2 must be a number"),
        ((10, 0, 10, 10), "x2 (10) must be greater than x1 (10)"),
        ((20, 0, 10, 10), "x2 (10) must be greater than x1 (20)"),
        ((0, 10, 10, 5), "y2 (5) must be greater than y1 (10)"),
        ((-1, 0, 10, 10), "outside the image"),
        ((0, 0, 101, 10), "outside the image"),
        ((0, 0, 10, 50.5), "outside the image"),
        ((0, 0, 3, 10), "at least 4 px"),
        ((0, 0, 10, 2), "at least 4 px"),
    ],
)
def test_validate_box_refuses_bad_boxes_with_a_clear_message(coords, message):
    with pytest.raises(BoxError) as err:
        validate_box(*coords, width=100, height=50)
    assert message in str(err.value)


def test_validate_box_min_size_is_configurable():
    validate_box(0, 0, 3, 3, 100, 100, min_size=2)
    with pytest.raises(BoxError):
        validate_box(0, 0, 3, 3, 100, 100, min_size=5)


def test_validate_box_refuses_a_nonpositive_image_size():
    with pytest.raises(BoxError, match="image size"):
        validate_box(0, 0, 10, 10, width=0, height=50)


def test_box_error_is_a_value_error():
    assert issubclass(BoxError, ValueError)


# --- the 5 px duplicate rule ----------------------------------------------------------------------------


def test_new_box_with_no_existing_boxes_is_allowed():
    assert differs_by_at_least((0, 0, 10, 10), [])


def test_box_nudged_by_less_than_5px_on_every_side_is_a_duplicate():
    assert not differs_by_at_least((2, 3, 14, 13), [(0, 0, 10, 10)])
    assert not differs_by_at_least((4.9, 0, 10, 10), [(0, 0, 10, 10)])


def test_box_moved_by_exactly_5px_on_one_coordinate_is_allowed():
    assert differs_by_at_least((5, 0, 10, 10), [(0, 0, 10, 10)])
    assert differs_by_at_least((0, 0, 10, 15), [(0, 0, 10, 10)], px=5)


def test_duplicate_rule_must_hold_against_every_existing_box():
    existing = [(100, 100, 200, 200), (0, 0, 50, 50)]
    assert differs_by_at_least((300, 300, 400, 400), existing)
    assert not differs_by_at_least((1, 1, 51, 49), existing)


def test_adjacent_boxes_sharing_an_edge_are_not_duplicates():
    assert differs_by_at_least((50, 0, 100, 50), [(0, 0, 50, 50)])


def test_duplicate_threshold_is_configurable():
    assert not differs_by_at_least((8, 0, 18, 10), [(0, 0, 10, 10)], px=10)
    assert differs_by_at_least((8, 0, 18, 10), [(0, 0, 10, 10)], px=8)


# --- matching and coverage measures ---------------------------------------------------------------------


def test_greedy_match_pairs_each_true_box_with_its_best_fit():
    true = [(0, 0, 10, 10), (20, 0, 30, 10)]
    pred = [(21, 0, 30, 10), (0, 0, 10, 10), (0, 0, 9, 10)]
    matches = greedy_match(pred, true, 0.5)
    assert {(m.pred_index, m.true_index) for m in matches} == {(1, 0), (0, 1)}
    assert matches[0].iou == 1.0  # best pair is taken first


def test_greedy_match_is_one_to_one():
    true = [(0, 0, 10, 10)]
    pred = [(0, 0, 10, 10), (0, 0, 10, 10)]
    assert len(greedy_match(pred, true)) == 1


def test_greedy_match_respects_the_threshold():
    assert greedy_match([(0, 0, 10, 10)], [(5, 0, 15, 10)], 0.5) == []
    assert len(greedy_match([(0, 0, 10, 10)], [(5, 0, 15, 10)], 0.3)) == 1


def test_greedy_match_in_given_order_lets_earlier_predictions_claim_first():
    true = [(0, 0, 10, 10)]
    pred = [(0, 0, 10, 10), (0, 0, 9, 10)]
    matches = greedy_match(pred, true, 0.5, pred_order=[1, 0])
    assert [(m.pred_index, m.true_index) for m in matches] == [(1, 0)]


def test_greedy_match_refuses_an_order_that_is_not_a_permutation():
    with pytest.raises(ValueError):
        greedy_match([(0, 0, 1, 1)], [(0, 0, 1, 1)], pred_order=[0, 0])


def test_coverage_and_accuracy_measures():
    true = [(0, 0, 10, 10), (20, 0, 30, 10), (40, 0, 50, 10)]
    pred = [(0, 0, 10, 10), (20, 0, 29, 10), (100, 100, 110, 110)]
    assert coverage_fraction(pred, true) == pytest.approx(2 / 3)
    assert not is_fully_covered(pred, true)
    assert is_fully_covered(pred + [(40, 0, 50, 10)], true)
    np.testing.assert_allclose(best_iou(pred, true), [1.0, 0.9, 0.0])
    assert accurate_fraction(pred, true, 0.7) == pytest.approx(2 / 3)
    assert accurate_fraction(pred, true, 0.95) == pytest.approx(1 / 3)


def test_measures_on_empty_inputs():
    assert coverage_fraction([(0, 0, 1, 1)], []) == 1.0
    assert coverage_fraction([], [(0, 0, 1, 1)]) == 0.0
    assert accurate_fraction([], [(0, 0, 1, 1)]) == 1.0
    assert best_iou([(0, 0, 1, 1)], []).tolist() == [0.0]
