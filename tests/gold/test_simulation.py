"""Gold against a crowd with 20% spammers (random and always-yes), a colluding group and 10% weak workers near
0.6 accuracy: spammers are blocked quickly, weak workers mostly, honest workers almost never, and the final labels
are as precise as without spammers.

Simulated with simulator.gold_simulation (the rules of gold.scoring, the fixed qualification set and vote voiding on
simulator.simulated workers) rather than over HTTP, which would take minutes for a crowd large enough to measure a 1%
share.

The rule must block a worker at 16 of 27 right (issue 13: a random worker who was never blocked) yet spare honest
workers, who answer dozens of gold items each over a run this long. P(accuracy < 0.8) > 0.993 does both (16 of 27
gives 0.99306); "honest" is every non-spammer with accuracy >= 0.7. Workers between 0.7 and 0.8 are the ones it
sometimes blocks: a crowd whose weak workers spread up to 0.75 (the simulator's default) loses 1.2-1.3% of its
"honest" workers that way (docs/gold.md). The weak workers here are the issue's, around 0.6. Earlier versions of
this test used the default spread and a rule that never blocked 16 of 27; the weak band is now the issue's.
"""

from __future__ import annotations

import numpy as np

from gold import sprt
from simulator.gold_simulation import GoldSimSpec, run
from simulator.simulated import CrowdSpec

CROWD = dict(n_workers=600, seed=11, sloppy_fraction=0.1, lazy_fraction=0.05, low_quality_range=(0.55, 0.65))


def gold_run(spammers: float, colluders: float):
    spec = GoldSimSpec(
        crowd=CrowdSpec(spammer_fraction=spammers, colluder_fraction=colluders, **CROWD),
        n_questions=24_000,
        gold_rate=0.1,
        seed=11,
    )
    return run(spec)


def test_spammers_blocked_quickly_honest_rarely_and_precision_unchanged():
    with_spam = gold_run(0.2, 0.02)
    clean = gold_run(0.0, 0.0)

    assert with_spam.spammers == 132  # 120 spammers (60 random, 60 always-yes) and 12 colluders
    median = with_spam.gold_to_block(0.5)
    print(
        f"median gold answers to block {median}, 90th percentile {with_spam.gold_to_block(0.9)}, "
        f"blocked within 20: {with_spam.blocked_within(20):.2f}, "
        f"honest blocked {with_spam.honest_fit_blocked}/{with_spam.honest_fit}, "
        f"precision {with_spam.precision:.5f} vs {clean.precision:.5f}, gold share {with_spam.gold_share:.3f}"
    )
    assert median <= 20
    assert with_spam.blocked_within(20) >= 0.5
    assert with_spam.spammers_blocked >= 0.95 * with_spam.spammers
    assert with_spam.spammers_qualified <= 0.03 * with_spam.spammers, "few pass a set built against chance"
    weak_blocked, weak = with_spam.blocked_share(0.0, 0.7)
    assert weak_blocked >= 0.5 * weak, "workers near 0.6 accuracy are blocked too"

    assert with_spam.honest_fit > 400
    assert with_spam.honest_fit_blocked <= 0.01 * with_spam.honest_fit
    assert clean.honest_fit_blocked <= 0.01 * clean.honest_fit

    assert with_spam.decided == clean.decided == 24_000
    assert abs(with_spam.precision - clean.precision) <= 0.002


def test_without_gold_the_same_spammers_hurt_precision():
    """The control: the same crowd with gold switched off keeps every spammer and loses precision, so the
    test above measures gold, not a consensus rule that shrugs spammers off on its own."""
    spec = GoldSimSpec(
        crowd=CrowdSpec(spammer_fraction=0.2, colluder_fraction=0.02, **CROWD),
        n_questions=6_000,
        gold_rate=0.0,
        qualification_size=0,
        seed=11,
    )
    no_gold = run(spec)
    clean = run(
        GoldSimSpec(
            crowd=CrowdSpec(spammer_fraction=0.0, **CROWD),
            n_questions=6_000,
            gold_rate=0.0,
            qualification_size=0,
            seed=11,
        )
    )
    assert no_gold.spammers_blocked == 0 and no_gold.gold_tasks == 0
    assert clean.precision - no_gold.precision > 0.005
    assert np.isnan(no_gold.gold_to_block(0.5))


def test_the_sequential_test_blocks_spammers_from_their_votes_where_gold_alone_is_slow():
    """No qualification set: workers go straight to production, where nine answers in ten are ordinary votes.
    Gold alone (today's rule) waits for the gold among them; the sequential test (gold.sprt) also reads the votes
    against the other voters of each decided question, and blocks every kind of spammer several times sooner,
    honest workers no more often and precision no worse."""
    crowd = dict(CROWD, n_workers=200, seed=3)
    spec = dict(n_questions=6_000, gold_rate=0.1, seed=3, qualification_size=0)
    spammy = CrowdSpec(spammer_fraction=0.2, colluder_fraction=0.02, **crowd)
    today = run(GoldSimSpec(crowd=spammy, **spec))
    sequential = run(GoldSimSpec(crowd=spammy, sprt_rule=sprt.SprtRule(), **spec))
    clean = run(
        GoldSimSpec(crowd=CrowdSpec(spammer_fraction=0.0, **crowd), sprt_rule=sprt.SprtRule(), **spec)
    )
    for kind, (n, at) in sequential.answers_to_block.items():
        assert len(at) >= 0.95 * n, kind
        slow = today.answers_to_block[kind][1]
        assert np.median(at) * 2 < (np.median(slow) if slow else np.inf), kind
    assert sequential.honest_fit_blocked <= 0.01 * sequential.honest_fit
    assert clean.honest_fit_blocked <= 0.01 * clean.honest_fit
    assert sequential.precision >= clean.precision - 0.002
