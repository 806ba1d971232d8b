"""The pure quality figures: Wilson intervals, gold checks folded per kind, the histogram's bins and the order
of the hardest synsets, the review load per 100 images."""

from __future__ import annotations

import pytest

from organize.quality_stats import (
    GoldCheck,
    SynsetReviewLoad,
    SynsetVotes,
    accuracy_histogram,
    boxed_only,
    gold_checks,
    hardest,
    precision_row,
    review_load,
    wilson_interval,
)


def test_wilson_interval_matches_the_textbook_value_and_stays_inside_0_1():
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    low, high = wilson_interval(10, 10)
    assert high == 1.0 and 0.69 < low < 0.73  # the normal interval would collapse to [1, 1]
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_gold_checks_count_agreement_per_kind_and_ignore_review():
    checks = gold_checks(
        [
            ("image_verify", "accepted", True, 9),
            ("image_verify", "accepted", False, 1),
            ("image_verify", "rejected", False, 4),
            ("image_verify", "rejected", True, 2),
            ("box_quality", "accepted", True, 3),
            ("box_quality", "review", True, 5),
        ]
    )
    assert checks == [
        GoldCheck("box_quality", accepted=3, accepted_gold_yes=3),
        GoldCheck("image_verify", accepted=10, accepted_gold_yes=9, rejected=6, rejected_gold_no=4),
    ]
    row = precision_row(checks[1])
    assert row["precision"]["value"] == pytest.approx(0.9)
    assert row["precision"]["low"] < 0.9 < row["precision"]["high"]
    assert row["negative_predictive_value"]["value"] == pytest.approx(4 / 6)
    empty = precision_row(GoldCheck("hierarchy"))
    assert empty["precision"] == {"value": None, "low": None, "high": None}


def test_histogram_lists_every_bin_and_puts_perfect_accuracy_in_the_last():
    bins = accuracy_histogram({0: 1, 7: 3, 10: 2, None: 5})
    assert [b["workers"] for b in bins] == [1, 0, 0, 0, 0, 0, 0, 3, 0, 2]
    assert bins[0]["low"] == 0.0 and bins[-1]["high"] == 1.0


def test_hardest_synsets_need_the_most_votes_then_go_to_review_most():
    rows = [
        SynsetVotes("image_verify", "n1", "easy", questions=10, votes=30, review=0),
        SynsetVotes("image_verify", "n2", "hard", questions=10, votes=80, review=1),
        SynsetVotes("image_verify", "n3", "ambiguous", questions=10, votes=80, review=4),
        SynsetVotes("image_verify", "n4", "unasked", questions=0, votes=0, review=0),
    ]
    assert [r.wnid for r in hardest(rows, k=3)] == ["n3", "n2", "n1"]
    assert rows[1].as_row()["votes_per_question"] == 8.0 and rows[2].as_row()["review_share"] == 0.4


def test_review_load_counts_open_and_decided_items_per_100_images_heaviest_first():
    rows = [
        SynsetVotes("image_verify", "n1", "dog", questions=400, votes=1000, review=1),
        SynsetVotes("box_quality", "n1", "dog", questions=300, votes=600, review=2),
        SynsetVotes("hierarchy", "n2", "cat", questions=50, votes=400, review=2),
        SynsetVotes("box_coverage", "n3", "owl", questions=30, votes=90, review=0),
    ]
    image_kinds = {"image_verify", "hierarchy"}
    assert boxed_only(rows, image_kinds) == {"n3"}
    load = review_load(rows, image_kinds, {"n1": 1, "n3": 2}, {"n1": 120, "n3": 20})
    assert [r.wnid for r in load] == ["n3", "n2", "n1"]  # heaviest first
    owl, cat, dog = load
    # Dogs: their images are the verification questions' (box jobs are on some of those same images); box
    # questions' votes and review count too.
    assert (dog.images, dog.votes, dog.review_open, dog.review_decided) == (400, 1600, 3, 1)
    assert dog.votes_per_image == 4.0 and dog.review_per_100_images == 1.0
    assert cat.as_row()["review_per_100_images"] == 4.0 and cat.as_row()["votes_per_image"] == 8.0
    # Owls were only boxed: one image per box job.
    assert (owl.images, owl.review_items, owl.review_per_100_images) == (20, 2, 10.0)
    unasked = SynsetReviewLoad("n4", "yak", images=0, votes=0, review_open=0, review_decided=0)
    assert unasked.review_per_100_images == 0.0 and unasked.votes_per_image == 0.0
