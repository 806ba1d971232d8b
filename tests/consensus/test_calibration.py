"""Confidence tables: hand-computed values, smoothing of sparse patterns, monotonicity, storage round trip."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consensus.calibration import (
    ConfidenceTable,
    bimonotone_projection,
    build_table,
    calibration_sample_size,
    is_monotone,
    pava,
    prefix_pattern_counts,
    reference_labels,
)

Y, N = True, False


def test_reference_label_is_gold_where_known_else_majority_with_ties_at_tie_label():
    seqs = [[Y, Y, N], [N, N, Y], [Y, N], [Y, Y, Y]]
    labels = reference_labels(seqs, gold=[None, None, None, False], tie_label=0.5)
    assert labels.tolist() == [1.0, 0.0, 0.5, 0.0]
    assert reference_labels(seqs, tie_label=1.0)[2] == 1.0


def test_prefix_counts_count_every_prefix_once_including_the_empty_one():
    positives, images = prefix_pattern_counts([[Y, N], [Y, Y]], np.array([1.0, 0.0]), cap=2)
    assert images[0, 0] == 2 and positives[0, 0] == 1
    assert images[1, 0] == 2 and positives[1, 0] == 1
    assert images[1, 1] == 1 and positives[1, 1] == 1
    assert images[2, 0] == 1 and positives[2, 0] == 0
    assert images.sum() == 6


def test_prefix_counts_stop_at_the_cap():
    _, images = prefix_pattern_counts([[Y] * 20], np.array([1.0]), cap=5)
    assert images[5, 0] == 1 and images.sum() == 6


def test_table_matches_hand_computation_on_four_gold_images():
    # Gold on every image clamps the mixture: Beta(6, 2) yes-rate for positives, Beta(2, 6) for negatives,
    # prior 0.5. Beta-binomial predictive: m(1,0) = 6/8 / (6/8 + 2/8) = 0.75; m(2,0) = 42 / (42 + 6) = 0.875;
    # m(3,0) = 336 / (336 + 24); m(2,1) = 84 / (84 + 36) = 0.7. With prior_strength 2 each cell is
    # (positives + 2 m) / (images + 2); (1,1) is never observed and keeps m = 0.5.
    seqs = [[Y, Y, Y], [Y, Y, N], [N, N, N], [N, N, Y]]
    table = build_table(seqs, gold=[True, True, False, False], cap=3, prior_strength=2.0)
    m30 = 336 / 360
    expected = {
        (0, 0): 0.5,
        (1, 0): (2 + 2 * 0.75) / 4,
        (2, 0): (2 + 2 * 0.875) / 4,
        (3, 0): (1 + 2 * m30) / 3,
        (1, 1): 0.5,
        (2, 1): (1 + 2 * 0.7) / 3,
        (0, 1): (0 + 2 * 0.25) / 4,
        (0, 2): (0 + 2 * 0.125) / 4,
        (1, 2): (0 + 2 * 0.3) / 3,
        (0, 3): (0 + 2 * (1 - m30)) / 3,
    }
    for (a, b), value in expected.items():
        assert table.p_positive(a, b) == pytest.approx(value, abs=1e-9), (a, b)
    assert table.prior == pytest.approx(0.5)
    assert table.sensitivity == pytest.approx(0.75) and table.false_positive_rate == pytest.approx(0.25)
    assert table.n_images == 4 and table.n_votes == 12


def test_pava_pools_adjacent_violators_by_weight():
    out = pava(np.array([1.0, 3.0, 2.0, 4.0]), np.array([1.0, 1.0, 3.0, 1.0]))
    assert out.tolist() == pytest.approx([1.0, 2.25, 2.25, 4.0])


def test_bimonotone_projection_pools_a_cell_that_more_yes_made_lower():
    # cap 1 triangle: (0,0)=0.5 w3, (1,0)=0.4 w1 violates "more yes never lowers P"; pooled (1.5+0.4)/4.
    table = np.array([[0.5, 0.2], [0.4, np.nan]])
    weights = np.array([[3.0, 1.0], [1.0, 0.0]])
    out = bimonotone_projection(table, weights)
    assert out[0, 0] == pytest.approx(0.475) and out[1, 0] == pytest.approx(0.475)
    assert out[0, 1] == pytest.approx(0.2) and np.isnan(out[1, 1])


def test_bimonotone_projection_leaves_a_monotone_table_alone():
    table = np.array([[0.5, 0.3, 0.1], [0.7, 0.5, np.nan], [0.9, np.nan, np.nan]])
    out = bimonotone_projection(table, np.ones_like(table))
    np.testing.assert_allclose(out, table, equal_nan=True)


def test_sparse_patterns_stay_strictly_inside_zero_and_one():
    # Every calibration image unanimous: raw frequencies would be exactly 1 and 0 on the seen patterns.
    seqs = [[Y] * 10] * 12 + [[N] * 10] * 8
    table = build_table(seqs, cap=12)
    inside = ~np.isnan(table.probabilities)
    assert np.all(table.probabilities[inside] > 0.0) and np.all(table.probabilities[inside] < 1.0)
    # One image seen at a pattern is not proof: the lone positive at (1, 1) does not make it certain.
    table = build_table([[Y, N, Y, Y], [N, N, N, N], [Y, Y, Y, Y]], cap=4)
    assert 0.05 < table.p_positive(1, 1) < 0.95


def test_a_synset_with_poor_agreement_needs_more_votes_than_an_easy_one():
    rng = np.random.default_rng(3)
    truth = rng.random(80) < 0.6

    def seqs(acc: float) -> list[np.ndarray]:
        return [(rng.random(10) < acc) == t for t in truth]

    easy, hard = build_table(seqs(0.95)), build_table(seqs(0.75))
    assert easy.p_positive(3, 0) > hard.p_positive(3, 0)
    assert easy.p_positive(0, 3) < hard.p_positive(0, 3)


@settings(max_examples=40, deadline=None)
@given(
    n_images=st.integers(min_value=1, max_value=40),
    accuracy=st.floats(min_value=0.3, max_value=1.0),
    positive_rate=st.floats(min_value=0.0, max_value=1.0),
    prior_strength=st.sampled_from([0.5, 10.0, 100.0]),
    seed=st.integers(min_value=0, max_value=2**31 - 1),
)
def test_table_is_monotone_on_any_vote_data(n_images, accuracy, positive_rate, prior_strength, seed):
    rng = np.random.default_rng(seed)
    truth = rng.random(n_images) < positive_rate
    lengths = rng.integers(1, 15, size=n_images)
    seqs = [(rng.random(k) < accuracy) == t for k, t in zip(lengths, truth, strict=True)]
    table = build_table(seqs, cap=12, prior_strength=prior_strength)
    assert is_monotone(table)
    inside = ~np.isnan(table.probabilities)
    assert np.all((table.probabilities[inside] > 0) & (table.probabilities[inside] < 1))


def test_table_survives_a_json_round_trip():
    rng = np.random.default_rng(0)
    table = build_table([rng.random(10) < 0.7 for _ in range(30)])
    restored = ConfidenceTable.from_dict(json.loads(json.dumps(table.to_dict())))
    np.testing.assert_array_equal(restored.probabilities, table.probabilities)
    np.testing.assert_array_equal(restored.counts, table.counts)
    assert (restored.cap, restored.n_images, restored.n_votes, restored.method) == (
        table.cap,
        table.n_images,
        table.n_votes,
        table.method,
    )


def test_lookup_outside_the_cap_is_refused_or_nan():
    table = build_table([[Y, Y], [N, N]], cap=2)
    with pytest.raises(ValueError):
        table.p_positive(2, 1)
    assert np.isnan(table.lookup([2], [1])[0])


def test_refining_with_more_votes_moves_the_table_towards_the_truth():
    rng = np.random.default_rng(7)

    def seqs(n: int) -> list[np.ndarray]:
        truth = rng.random(n) < 0.5
        return [(rng.random(10) < 0.8) == t for t in truth]

    small, large = build_table(seqs(20)), build_table(seqs(2000))
    true_p = 0.8**3 / (0.8**3 + 0.2**3)  # P(positive | 3 yes, 0 no) at prior 0.5, accuracy 0.8
    assert large.n_images == 2000
    assert abs(large.p_positive(3, 0) - true_p) < 0.01
    assert abs(large.p_positive(3, 0) - true_p) <= abs(small.p_positive(3, 0) - true_p) + 0.005


@pytest.mark.parametrize(("candidates", "size"), [(10, 10), (50, 20), (500, 50), (5000, 100)])
def test_calibration_sample_is_ten_percent_clamped_to_20_and_100(candidates, size):
    assert calibration_sample_size(candidates) == size


def test_the_prior_table_follows_the_vote_margin_and_is_monotone():
    from consensus.calibration import is_monotone, prior_table

    table = prior_table(accuracy=0.9, cap=12)
    assert table.p_positive(3, 0) > 0.997 > table.p_positive(2, 0)
    assert table.p_positive(0, 2) < 0.02 < table.p_positive(0, 1)
    assert table.p_positive(5, 2) == pytest.approx(table.p_positive(3, 0))
    assert is_monotone(table)
