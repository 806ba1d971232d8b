"""Today's blocking rule (the Beta posterior on gold answers) side by side with the sequential test on every
answer (gold.sprt: gold and agreement with decided questions), in the same seeded runs: how many answers a
spammer gives before the block, by kind (random, always-yes, colluding), how many honest workers are blocked, and
what the spammers do to precision; then how the drawer rule treats drawers by the share of their boxes the
quality question accepts.

Pure simulation (simulator.gold_simulation: the rules of gold.scoring and gold.sprt, the fixed qualification set
and vote voiding on the simulator's crowd), gold at rate 0.1, with 20% spammers (half random, half always-yes), a
colluding group of 2% and 10% weak workers near 0.6 accuracy (uniform 0.55-0.65); each run once with the
qualification set (the platform's default) and once without (every worker goes straight to production, where
most of their answers are ordinary votes). Answers to block count every answer, gold and votes. The drawer table
is exact (the rule checked after every verdict, summed over every path of verdicts), not sampled.
With --honest-accuracy A every honest worker is right with probability A (no weak workers): the check of the
honest floor itself (0.7), which the default crowd (mean 0.88) has few of. The floor line prints the fewest
answers any rule needs (gold.sprt.fewest_answers) to block half and 95% of the coin-flippers while blocking at
most 1% of workers at the floor.
Run: python bench/gold_cost.py [--quick] [--seeds N] [--first-seed S] [--honest-accuracy A]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gold import scoring, sprt  # noqa: E402
from simulator.gold_simulation import HONEST_FLOOR, GoldSimSpec, run  # noqa: E402
from simulator.simulated import CrowdSpec  # noqa: E402

RATE = 0.10
RULES = {"today": None, "sequential": sprt.SprtRule()}
KINDS = (("random_spammer", "random"), ("yes_spammer", "always-yes"), ("colluder", "colluders"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller crowd and fewer questions")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument(
        "--honest-accuracy",
        type=float,
        default=None,
        help="every honest worker right this often, no weak ones",
    )
    args = parser.parse_args()
    workers, questions = (200, 6_000) if args.quick else (600, 24_000)
    seeds = range(args.first_seed, args.first_seed + (args.seeds or (1 if args.quick else 3)))
    honest = (
        {}
        if args.honest_accuracy is None
        else {
            "accuracy_mean": args.honest_accuracy,
            "accuracy_concentration": 1e6,
            "low_quality_fraction": 0.0,
        }
    )

    def crowd(seed: int, spam: bool) -> CrowdSpec:
        return CrowdSpec(
            **honest,
            n_workers=workers,
            seed=seed,
            spammer_fraction=0.2 if spam else 0.0,
            colluder_fraction=0.02 if spam else 0.0,
            low_quality_range=(0.55, 0.65),
        )

    rule = RULES["sequential"]
    print(
        "floor (any rule, honest workers at 0.7 blocked <= 1%): coin-flippers need >= "
        f"{sprt.fewest_answers(HONEST_FLOOR, 0.01, 0.5):.1f} answers for half of them blocked, >= "
        f"{sprt.fewest_answers(HONEST_FLOOR, 0.01, 0.95):.1f} for 95%"
    )
    if args.honest_accuracy is not None:
        print(f"every honest worker right with probability {args.honest_accuracy}, no weak workers")
    print(
        f"{workers} workers, {questions} questions, seeds {list(seeds)}, gold rate {RATE}; 20% spammers + 2% "
        f"colluders, 10% weak workers (0.55-0.65). today: P(acc < {scoring.DEFAULT_BLOCK_THRESHOLD}) > "
        f"{scoring.DEFAULT_BLOCK_CONFIDENCE} on gold answers; sequential: p_gold {rule.p_gold}, p_agreement "
        f"{rule.p_agreement}, alpha {rule.alpha}, beta {rule.beta}, reference lead {rule.reference_lead}"
    )
    kind_head = " ".join(f"{label + ' med/p95/<=10/<=30':>30}" for _, label in KINDS)
    header = (
        f"{'qualification':>13} {'rule':>10} {kind_head} {'all blk':>7} {'honest blk':>10} {'clean blk':>9} "
        f"{'weak blk':>8} {'precision':>9} {'clean prec':>10} {'delta pp':>8} {'gold share':>10} {'s':>5}"
    )
    print(header)
    print("-" * len(header))
    for qualification in (True, False):
        for name, sequential in RULES.items():
            started = time.perf_counter()
            rows = []
            for seed in seeds:
                spec = dict(n_questions=questions, gold_rate=RATE, seed=seed, sprt_rule=sequential)
                if not qualification:
                    spec["qualification_size"] = 0
                rows.append(
                    (
                        run(GoldSimSpec(crowd=crowd(seed, True), **spec)),
                        run(GoldSimSpec(crowd=crowd(seed, False), **spec)),
                    )
                )
            cells = []
            for kind, _ in KINDS:
                n = sum(r.answers_to_block[kind][0] for r, _ in rows)
                at = sorted(a for r, _ in rows for a in r.answers_to_block[kind][1])
                # Workers never blocked count as never: the median and 95th percentile are over all of them.
                med, p95 = _rank(at, n, 0.5), _rank(at, n, 0.95)
                w10, w30 = (sum(1 for a in at if a <= k) / n for k in (10, 30))
                cells.append(f"{_shown(med) + '/' + _shown(p95) + f'/{w10:.2f}/{w30:.2f}':>30}")
            spammers = sum(r.spammers for r, _ in rows)
            blocked_all = sum(r.spammers_blocked for r, _ in rows)
            honest_fit = sum(r.honest_fit for r, _ in rows)
            honest_blocked = sum(r.honest_fit_blocked for r, _ in rows)
            clean_fit = sum(c.honest_fit for _, c in rows)
            clean_blocked = sum(c.honest_fit_blocked for _, c in rows)
            weak = [r.blocked_share(0.0, HONEST_FLOOR) for r, _ in rows]
            weak_share = sum(b for b, _ in weak) / max(1, sum(n for _, n in weak))
            prec = sum(r.precision for r, _ in rows) / len(rows)
            clean = sum(c.precision for _, c in rows) / len(rows)
            paid = sum(r.paid_tasks for r, _ in rows)
            gold = sum(r.gold_tasks for r, _ in rows)
            print(
                f"{'yes' if qualification else 'no':>13} {name:>10} {' '.join(cells)} "
                f"{blocked_all / spammers:>7.2f} {honest_blocked / honest_fit:>10.4f} "
                f"{clean_blocked / clean_fit:>9.4f} {weak_share:>8.2f} {prec:>9.4f} {clean:>10.4f} "
                f"{100 * (prec - clean):>8.3f} {gold / paid:>10.3f} {time.perf_counter() - started:>5.1f}"
            )
    print(
        "med/p95/<=10/<=30: every answer (gold and votes) a spammer of that kind had given when blocked, median "
        "and 95th percentile (never: not blocked by the end), and the share blocked within 10 and 30 answers; all "
        "blk: share of all spammers blocked; honest blk / clean blk: share of non-spammers with accuracy >= "
        f"{HONEST_FLOOR} ever blocked, with and without spammers; weak blk: share of non-spammers below it "
        "blocked; precision vs the same crowd without spammers under the same rule (delta in points); gold "
        "share: gold tasks / paid tasks (qualification included)."
    )
    draw_table()


def _rank(blocked_at: list[int], workers: int, q: float) -> int | None:
    """The q-quantile (nearest rank) of answers at block over `workers`, those never blocked last (None)."""
    k = max(1, math.ceil(q * workers))
    return blocked_at[k - 1] if k <= len(blocked_at) else None


def _shown(answers: int | None) -> str:
    return "never" if answers is None else str(answers)


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
