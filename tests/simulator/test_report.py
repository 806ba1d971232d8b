"""The side-by-side table `simulate --compare-crowds` prints."""

from __future__ import annotations

from simulator.report import side_by_side


def test_side_by_side_lists_every_scalar_key_of_every_summary_in_one_column_per_crowd():
    table = side_by_side(
        {"hostile": {"recall": 0.7, "review": {"decided": 3}}, "clean": {"recall": 0.95, "box_coverage": 0.9}}
    ).splitlines()
    assert table[0] == "| measure | hostile | clean |"
    assert "| recall | 0.7 | 0.95 |" in table
    assert "| box_coverage | None | 0.9 |" in table
    assert not any("review" in line for line in table)  # nested figures stay in the JSON
