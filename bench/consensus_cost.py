"""Votes per image at equal quality: fixed majorities vs dynamic consensus vs reliability-weighted consensus.

Runs every rule on the same seeded simulated crowd (pure numpy), charges calibration votes to the dynamic and
weighted rules, and reports precision, recall and votes per image, whether the targets of the dynamic-consensus
issue hold, the time to build a calibration table, and decision throughput over 1,000,000 votes.

    python bench/consensus_cost.py            # 20 synsets x 1000 candidates, 3 seeds
    python bench/consensus_cost.py --quick    # 20 synsets x 300 candidates, 1 seed
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from consensus.calibration import build_table  # noqa: E402
from consensus.reliability import decide_stream, fit_dawid_skene  # noqa: E402
from consensus.simulation import CrowdModel, Outcome, Workload  # noqa: E402
from consensus.stopping import decide_many, thresholds_for_precision  # noqa: E402

TARGET_PRECISION = 0.997
COMPARED_MAJORITIES = (3, 5, 7)
# Larger majorities are run only to find the cheapest fixed rule that reaches the dynamic rule's precision.
REFERENCE_MAJORITIES = (9, 11, 13, 15, 17, 19)


def mean_outcome(outcomes: list[Outcome]) -> Outcome:
    first = outcomes[0]
    return Outcome(
        name=first.name,
        precision=sum(o.precision * o.accepted for o in outcomes) / max(sum(o.accepted for o in outcomes), 1),
        recall=float(np.mean([o.recall for o in outcomes])),
        votes_per_image=sum(o.n_votes for o in outcomes) / sum(o.n_images for o in outcomes),
        accepted=sum(o.accepted for o in outcomes),
        rejected=sum(o.rejected for o in outcomes),
        review=sum(o.review for o in outcomes),
        n_images=sum(o.n_images for o in outcomes),
        n_votes=sum(o.n_votes for o in outcomes),
    )


def print_row(o: Outcome, note: str = "") -> None:
    print(
        f"{o.name:<12} {100 * o.precision:9.3f}% {100 * o.recall:8.2f}% {o.votes_per_image:10.3f}"
        f" {o.accepted:9d} {o.review:8d}  {note}"
    )


def compare(args: argparse.Namespace) -> None:
    policy = thresholds_for_precision(TARGET_PRECISION)
    results: dict[str, list[Outcome]] = {}
    t0 = time.perf_counter()
    for seed in range(args.seeds):
        model = CrowdModel(n_synsets=args.synsets, images_per_synset=args.images, seed=seed)
        workload = Workload.make(model, max_votes=max(REFERENCE_MAJORITIES), seed=seed + 100)
        for n in COMPARED_MAJORITIES + REFERENCE_MAJORITIES:
            results.setdefault(f"majority{n}", []).append(workload.run_majority(n))
        results.setdefault("dynamic", []).append(workload.run_dynamic(policy)[0])
        results.setdefault("weighted", []).append(workload.run_weighted(policy))
    elapsed = time.perf_counter() - t0
    rows = {name: mean_outcome(outs) for name, outs in results.items()}

    print(
        f"Simulated crowd: {args.synsets} synsets x {args.images} candidates x {args.seeds} seed(s); 60% true"
        " positives; honest workers ~Beta(mean 0.88) shifted per synset; 10% spammers; 3% ambiguous images."
    )
    print(
        f"Dynamic/weighted: tau_accept={policy.tau_accept}, tau_reject={policy.tau_reject}, cap={policy.cap};"
        " calibration = 10% of each synset (20..100 images) x 10 votes, charged below."
    )
    print(f"\n{'rule':<12} {'precision':>10} {'recall':>9} {'votes/img':>10} {'accepted':>9} {'review':>8}")
    for n in COMPARED_MAJORITIES:
        print_row(rows[f"majority{n}"])
    print_row(rows["dynamic"], "(calibration included)")
    print_row(rows["weighted"], "(calibration included)")
    print("reference majorities (only to find the cheapest fixed rule at the dynamic rule's precision):")
    for n in REFERENCE_MAJORITIES:
        print_row(rows[f"majority{n}"])
    print(f"(simulation time {elapsed:.1f} s)")

    dynamic, weighted = rows["dynamic"], rows["weighted"]
    print("\nTargets")
    ok = dynamic.precision >= TARGET_PRECISION
    print(
        f"  dynamic precision >= {100 * TARGET_PRECISION:.1f}%: {'HOLDS' if ok else 'MISSED'} ({100 * dynamic.precision:.3f}%)"
    )
    majorities = [rows[f"majority{n}"] for n in COMPARED_MAJORITIES + REFERENCE_MAJORITIES]
    for label, bar in (("the target", TARGET_PRECISION), ("dynamic's measured precision", dynamic.precision)):
        reaching = [m for m in majorities if m.precision >= bar]
        if not reaching:
            print(
                f"  no fixed majority up to {max(REFERENCE_MAJORITIES)} votes reaches {label} ({100 * bar:.3f}%)"
            )
            continue
        cheapest = min(reaching, key=lambda o: o.votes_per_image)
        saving = 1 - dynamic.votes_per_image / cheapest.votes_per_image
        verdict = "HOLDS" if saving >= 0.30 and ok else "MISSED"
        print(
            f"  >= 30% fewer votes than the cheapest fixed majority reaching {label} ({cheapest.name},"
            f" {100 * cheapest.precision:.3f}%, {cheapest.votes_per_image:.2f} votes/img): {verdict}"
            f" ({100 * saving:.1f}% fewer)"
        )
    equal = weighted.precision >= min(dynamic.precision, TARGET_PRECISION)
    fewer = weighted.votes_per_image < dynamic.votes_per_image
    print(
        f"  weighted uses fewer votes than dynamic at equal precision: {'HOLDS' if equal and fewer else 'MISSED'}"
        f" ({weighted.votes_per_image:.3f} vs {dynamic.votes_per_image:.3f} votes/img,"
        f" {100 * (1 - weighted.votes_per_image / dynamic.votes_per_image):.1f}% fewer;"
        f" precision {100 * weighted.precision:.3f}% vs {100 * dynamic.precision:.3f}%)"
    )


def throughput(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    print("\nThroughput")
    # Table building: 100 calibration images x 10 votes (the largest default calibration set).
    truth = rng.random(100) < 0.6
    seqs = [(rng.random(10) < 0.85) == t for t in truth]
    build_table(seqs)  # warm-up
    reps = 20
    t0 = time.perf_counter()
    for _ in range(reps):
        table = build_table(seqs)
    per_table = (time.perf_counter() - t0) / reps
    print(f"  build_table (100 images x 10 votes, cap 12): {1000 * per_table:.1f} ms per table")

    # Dynamic decisions: one lookup per arriving vote, 1,000,000 votes over 100,000 images.
    n_votes, per_image = 1_000_000, 10
    answers = rng.random((n_votes // per_image, per_image)) < 0.7
    policy = thresholds_for_precision(TARGET_PRECISION)
    t0 = time.perf_counter()
    yes = np.cumsum(answers, axis=1, dtype=np.int64)
    no = np.arange(1, per_image + 1)[None, :] - yes
    codes = decide_many(table, yes.ravel(), no.ravel(), policy)
    dt = time.perf_counter() - t0
    assert codes.size == n_votes
    print(f"  dynamic decide_many: {n_votes:,} votes in {dt:.3f} s = {n_votes / dt:,.0f} decisions/s")

    # Weighted: Dawid-Skene fit over 1,000,000 votes, then a decision after every vote of the stream.
    n_workers = 2000
    items = np.repeat(np.arange(n_votes // per_image), per_image)
    workers = rng.integers(0, n_workers, size=n_votes)
    acc = np.clip(rng.beta(26, 4, size=n_workers), 0.5, 0.99)
    item_truth = rng.random(items.max() + 1) < 0.6
    answers_flat = (rng.random(n_votes) < acc[workers]) == item_truth[items]
    t0 = time.perf_counter()
    fit = fit_dawid_skene(items, workers, answers_flat)
    fit_time = time.perf_counter() - t0
    order = rng.permutation(n_votes)
    t0 = time.perf_counter()
    stream_codes = decide_stream(fit.reliability, items[order], workers[order], answers_flat[order], policy)
    dt = time.perf_counter() - t0
    assert stream_codes.size == n_votes
    print(
        f"  Dawid-Skene EM on {n_votes:,} votes ({n_workers} workers): {fit_time:.2f} s,"
        f" {fit.iterations} iterations"
    )
    print(f"  weighted decide_stream: {n_votes:,} votes in {dt:.3f} s = {n_votes / dt:,.0f} decisions/s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="300 candidates per synset, one seed")
    parser.add_argument("--synsets", type=int, default=20)
    parser.add_argument("--images", type=int, default=None, help="candidates per synset (default 1000)")
    parser.add_argument("--seeds", type=int, default=None, help="independent crowds to pool (default 3)")
    args = parser.parse_args()
    args.images = args.images or (300 if args.quick else 1000)
    args.seeds = args.seeds or (1 if args.quick else 3)
    compare(args)
    throughput(args)


if __name__ == "__main__":
    main()
