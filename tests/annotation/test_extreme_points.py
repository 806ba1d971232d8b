"""Extreme clicking's points (Papadopoulos et al., ICCV 2017), checked without a database: four points inside
the image, each the extreme one in its direction, so the box is exactly their bounds; every refusal names the
point."""

from __future__ import annotations

import math

import pytest

from annotation.geometry import BoxError, ExtremePoints, validate_extreme_points

GOOD = {"top": [50, 10], "bottom": [40, 90], "left": [5, 60], "right": [120, 30]}


def test_good_points_give_their_bounds_as_the_box():
    points = validate_extreme_points(GOOD, width=200, height=100)
    assert points == ExtremePoints(top=(50, 10), bottom=(40, 90), left=(5, 60), right=(120, 30))
    assert points.bounds() == (5.0, 10.0, 120.0, 90.0)
    assert points.as_dict() == {"top": [50, 10], "bottom": [40, 90], "left": [5, 60], "right": [120, 30]}


def test_one_point_may_be_extreme_in_two_directions():
    # A right triangle: its top-left corner is both the top-most and the left-most point.
    points = validate_extreme_points(
        {"top": [0, 0], "left": [0, 0], "bottom": [0, 50], "right": [50, 50]}, width=60, height=60
    )
    assert points.bounds() == (0.0, 0.0, 50.0, 50.0)


@pytest.mark.parametrize(
    ("role", "point", "named"),
    [
        ("top", [50, 40], "points.top is not the top-most point: points.right lies beyond it"),
        ("bottom", [40, 29], "points.bottom is not the bottom-most point"),
        ("left", [60, 60], "points.left is not the left-most point: points.top lies beyond it"),
        ("right", [45, 30], "points.right is not the right-most point: points.top lies beyond it"),
    ],
)
def test_a_point_that_is_not_the_extreme_in_its_direction_is_refused_by_name(role, point, named):
    with pytest.raises(BoxError, match=named):
        validate_extreme_points({**GOOD, role: point}, width=200, height=100)


@pytest.mark.parametrize(
    ("points", "named"),
    [
        ({**GOOD, "right": [201, 30]}, r"points.right \(201, 30\) lies outside the image"),
        ({**GOOD, "top": [50, -1]}, r"points.top \(50, -1\) lies outside the image"),
        ({**GOOD, "left": [5, math.nan]}, "points.left y must be a finite number"),
        ({**GOOD, "left": ["5", 60]}, "points.left x must be a number"),
        ({**GOOD, "left": [True, 60]}, "points.left x must be a number"),
        ({**GOOD, "bottom": [40]}, "points.bottom must be a list of 2 numbers"),
        ({k: v for k, v in GOOD.items() if k != "right"}, 'exactly "top", "bottom", "left" and "right"'),
        ({**GOOD, "centre": [1, 1]}, 'exactly "top", "bottom", "left" and "right"'),
        ([[50, 10], [40, 90], [5, 60], [120, 30]], 'exactly "top", "bottom", "left" and "right"'),
    ],
)
def test_malformed_or_outside_points_are_refused_by_name(points, named):
    with pytest.raises(BoxError, match=named):
        validate_extreme_points(points, width=200, height=100)
