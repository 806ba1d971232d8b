"""End-to-end check of the consensus rules on a seeded simulated crowd with known truth."""

import numpy as np
import pytest

from consensus.simulation import CrowdModel, Workload
from consensus.stopping import thresholds_for_precision


@pytest.fixture(scope="module")
def workload() -> Workload:
    # 20 synsets of varying difficulty, 60% true positives, honest accuracy ~Beta around 0.88, 10% spammers.
    return Workload.make(CrowdModel(n_synsets=20, images_per_synset=500, positive_rate=0.6, seed=0))


def test_the_simulated_crowd_has_the_advertised_shape(workload):
    crowd = workload.crowd
    assert crowd.model.n_synsets == 20 and abs(crowd.truth.mean() - 0.6) < 0.02
    assert crowd.spammer.mean() == pytest.approx(0.10, abs=0.01)
    honest = ~crowd.spammer
    accuracy = 1 / (1 + np.exp(-crowd.worker_logit[honest]))
    assert 0.85 <= accuracy.mean() <= 0.9 and accuracy.std() > 0.03
    assert np.ptp(crowd.synset_shift) > 0.8  # synsets differ in difficulty
    # Calibration sets: 10% of each synset's 500 candidates, i.e. 50 images each.
    assert workload.calibration.sum() == 20 * 50


def test_dynamic_consensus_reaches_target_precision_and_recall(workload):
    outcome, tables = workload.run_dynamic(thresholds_for_precision(0.997))
    assert outcome.precision >= 0.995
    assert outcome.recall >= 0.95
    # Harder synsets get tables that demand more agreement before accepting.
    assert len({round(t.sensitivity - t.false_positive_rate, 2) for t in tables.values()}) > 5


def test_dynamic_consensus_beats_majority_of_seven_on_precision(workload):
    dynamic, _ = workload.run_dynamic(thresholds_for_precision(0.997))
    majority7 = workload.run_majority(7)
    assert dynamic.precision > majority7.precision
    assert workload.run_majority(3).votes_per_image < majority7.votes_per_image


def test_reliability_weighted_consensus_keeps_quality_with_fewer_votes(workload):
    policy = thresholds_for_precision(0.997)
    dynamic, _ = workload.run_dynamic(policy)
    weighted = workload.run_weighted(policy)
    assert weighted.precision >= 0.995 and weighted.recall >= 0.95
    assert weighted.votes_per_image < dynamic.votes_per_image
