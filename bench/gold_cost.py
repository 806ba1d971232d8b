"""Gold overhead versus spammer detection delay and final precision, for gold rates 5%, 10% and 20%.

Pure simulation (gold.simulation: the rules of gold.scoring, qualification and vote voiding on the simulator's
crowd), with 20% spammers (half random, half always-yes) and a colluding group of 2%. Overhead is the share of
paid tasks that were gold (qualification included); delay is gold answers until a spammer is blocked, and the
task count a spammer gets through before that (their voided votes are what gold costs in repair).
Run: python bench/gold_cost.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crowd.simulated import CrowdSpec  # noqa: E402
from gold.simulation import GoldSimSpec, run  # noqa: E402

RATES = (0.05, 0.10, 0.20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller crowd and fewer questions")
    parser.add_argument("--seeds", type=int, default=None)
    args = parser.parse_args()
    workers, questions = (200, 6_000) if args.quick else (600, 24_000)
    seeds = range(args.seeds or (1 if args.quick else 2))

    def crowd(seed: int, spam: bool) -> CrowdSpec:
        return CrowdSpec(
            n_workers=workers,
            seed=seed,
            spammer_fraction=0.2 if spam else 0.0,
            colluder_fraction=0.02 if spam else 0.0,
        )

    print(f"{workers} workers, {questions} questions, seeds {list(seeds)}; 20% spammers + 2% colluders")
    header = (
        f"{'rate':>5} {'gold share':>10} {'median':>7} {'p90':>6} {'<=20':>6} {'blocked':>8} "
        f"{'honest blk':>10} {'precision':>9} {'clean prec':>10} {'delta pp':>8} {'tasks/q':>7} {'s':>5}"
    )
    print(header)
    print("-" * len(header))
    for rate in (0.0, *RATES):
        started = time.perf_counter()
        rows = []
        for seed in seeds:
            qual = 5 if rate else 0
            spec = dict(n_questions=questions, gold_rate=rate, qualification_size=qual, seed=seed)
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
        prec = sum(r.precision for r, _ in rows) / len(rows)
        clean = sum(c.precision for _, c in rows) / len(rows)
        median = f"{to_block[len(to_block) // 2]:>7}" if to_block else f"{'-':>7}"
        p90 = f"{to_block[int(0.9 * (len(to_block) - 1))]:>6}" if to_block else f"{'-':>6}"
        within = sum(1 for g in to_block if g <= 20) / spammers
        print(
            f"{rate:>5.2f} {gold / paid:>10.3f} {median} {p90} {within:>6.2f} "
            f"{len(to_block) / spammers:>8.2f} {honest_blocked / honest_fit:>10.4f} {prec:>9.4f} {clean:>10.4f} "
            f"{100 * (prec - clean):>8.3f} {paid / (questions * len(rows)):>7.2f} {time.perf_counter() - started:>5.1f}"
        )
    print(
        "gold share: gold tasks / paid tasks (qualification included); median, p90: gold answers when a spammer "
        "was blocked; <=20: share of spammers blocked within 20 gold answers; honest blk: share of non-spammers "
        "with accuracy >= 0.7 ever blocked; precision vs the same crowd without spammers at the same gold rate; "
        "tasks/q: paid tasks per question."
    )


if __name__ == "__main__":
    main()
