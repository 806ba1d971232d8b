"""Gold overhead versus spammer detection delay and final precision, for gold rates 5%, 10% and 20%, and how the
drawer rule treats drawers by the share of their boxes the quality question accepts.

Pure simulation (simulator.gold_simulation: the rules of gold.scoring, the fixed qualification set and vote voiding on the
simulator's crowd), with 20% spammers (half random, half always-yes), a colluding group of 2% and 10% weak
workers near 0.6 accuracy (uniform 0.55-0.65). Overhead is the share of paid tasks that were gold (qualification
included); delay is gold answers until a spammer is blocked. The drawer table is exact (the rule checked after
every verdict, summed over every path of verdicts), not sampled.
Run: python bench/gold_cost.py [--quick] [--seeds N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gold import scoring  # noqa: E402
from simulator.gold_simulation import HONEST_FLOOR, GoldSimSpec, run  # noqa: E402
from simulator.simulated import CrowdSpec  # noqa: E402

RATES = (0.05, 0.10, 0.20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller crowd and fewer questions")
    parser.add_argument("--seeds", type=int, default=None)
    args = parser.parse_args()
    workers, questions = (200, 6_000) if args.quick else (600, 24_000)
    seeds = range(args.seeds or (1 if args.quick else 3))

    def crowd(seed: int, spam: bool) -> CrowdSpec:
        return CrowdSpec(
            n_workers=workers,
            seed=seed,
            spammer_fraction=0.2 if spam else 0.0,
            colluder_fraction=0.02 if spam else 0.0,
            low_quality_range=(0.55, 0.65),
        )

    print(
        f"{workers} workers, {questions} questions, seeds {list(seeds)}; 20% spammers + 2% colluders, "
        f"10% weak workers (0.55-0.65); rule P(acc < {scoring.DEFAULT_BLOCK_THRESHOLD}) > "
        f"{scoring.DEFAULT_BLOCK_CONFIDENCE}, qualification {scoring.DEFAULT_QUALIFICATION_PASS} of "
        f"{scoring.DEFAULT_QUALIFICATION_SIZE}"
    )
    header = (
        f"{'rate':>5} {'gold share':>10} {'median':>7} {'p90':>6} {'<=20':>6} {'blocked':>8} {'qual':>5} "
        f"{'honest blk':>10} {'clean blk':>9} {'weak blk':>8} {'precision':>9} {'clean prec':>10} "
        f"{'delta pp':>8} {'tasks/q':>7} {'s':>5}"
    )
    print(header)
    print("-" * len(header))
    for rate in (0.0, *RATES):
        started = time.perf_counter()
        rows = []
        for seed in seeds:
            spec = dict(n_questions=questions, gold_rate=rate, seed=seed)
            if not rate:
                spec["qualification_size"] = 0  # no gold at all: no qualification either
            rows.append(
                (
                    run(GoldSimSpec(crowd=crowd(seed, True), **spec)),
                    run(GoldSimSpec(crowd=crowd(seed, False), **spec)),
                )
            )
        to_block = sorted(g for r, _ in rows for g in r.spammer_gold_to_block)
        spammers = sum(r.spammers for r, _ in rows)
        paid = sum(r.paid_tasks for r, _ in rows)
        gold = sum(r.gold_tasks for r, _ in rows)
        honest_fit = sum(r.honest_fit for r, _ in rows)
        honest_blocked = sum(r.honest_fit_blocked for r, _ in rows)
        clean_fit = sum(c.honest_fit for _, c in rows)
        clean_blocked = sum(c.honest_fit_blocked for _, c in rows)
        weak = [r.blocked_share(0.0, HONEST_FLOOR) for r, _ in rows]
        weak_share = sum(b for b, _ in weak) / max(1, sum(n for _, n in weak))
        qualified = sum(r.spammers_qualified for r, _ in rows)
        prec = sum(r.precision for r, _ in rows) / len(rows)
        clean = sum(c.precision for _, c in rows) / len(rows)
        median = f"{to_block[len(to_block) // 2]:>7}" if to_block else f"{'-':>7}"
        p90 = f"{to_block[int(0.9 * (len(to_block) - 1))]:>6}" if to_block else f"{'-':>6}"
        within = sum(1 for g in to_block if g <= 20) / spammers
        print(
            f"{rate:>5.2f} {gold / paid:>10.3f} {median} {p90} {within:>6.2f} "
            f"{len(to_block) / spammers:>8.2f} {qualified:>5} {honest_blocked / honest_fit:>10.4f} "
            f"{clean_blocked / clean_fit:>9.4f} {weak_share:>8.2f} {prec:>9.4f} {clean:>10.4f} "
            f"{100 * (prec - clean):>8.3f} {paid / (questions * len(rows)):>7.2f} {time.perf_counter() - started:>5.1f}"
        )
    print(
        "gold share: gold tasks / paid tasks (qualification included); median, p90: gold answers when a spammer "
        "was blocked; <=20: share of spammers blocked within 20 gold answers; qual: spammers (all seeds) who "
        "passed a qualification attempt; honest blk / clean blk: share of non-spammers with accuracy >= 0.7 ever "
        "blocked, with and without spammers; weak blk: share of non-spammers below 0.7 blocked; precision vs the "
        "same crowd without spammers at the same gold rate; tasks/q: paid tasks per question."
    )
    draw_table()


def draw_table() -> None:
    """Exact chance that a drawer whose boxes the quality question accepts with probability p is blocked."""
    rule = scoring.BlockRule(
        scoring.DEFAULT_DRAW_BLOCK_THRESHOLD, scoring.DEFAULT_BLOCK_CONFIDENCE, scoring.DEFAULT_MIN_ANSWERS
    )
    prior = scoring.Prior()
    blocked = [[scoring.score(k, n, prior, rule).blocked for k in range(n + 1)] for n in range(101)]
    first = next(n for n in range(101) if blocked[n][0])
    print(
        f"\ndrawers: P(accepted share < {rule.threshold}) > {rule.confidence}; all boxes rejected: blocked at {first}"
    )
    print(f"{'acceptance':>10} {'within 20':>10} {'within 100':>10}")
    for p in (0.02, 0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9):
        mass, out, by = {0: 1.0}, 0.0, {}
        for n in range(1, 101):
            step: dict[int, float] = {}
            for k, m in mass.items():
                step[k + 1] = step.get(k + 1, 0.0) + m * p
                step[k] = step.get(k, 0.0) + m * (1 - p)
            mass = {}
            for k, m in step.items():
                if blocked[n][k]:
                    out += m
                else:
                    mass[k] = m
            by[n] = out
        print(f"{p:>10.2f} {by[20]:>10.4f} {by[100]:>10.4f}")


if __name__ == "__main__":
    main()
