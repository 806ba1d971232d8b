"""Dynamic and weighted consensus against fixed majorities *through the platform*: each rule runs
`manage.py simulate --scenario verify` (HTTP API, queue, calibration, stopping rule) on the same seeded crowd,
each run on a fresh SQLite database, and the rules are printed side by side with the cheapest fixed majority
that reaches the consensus rule's precision (and the 0.997 target). A saving shown by the pure model
(bench/consensus_cost.py) counts only once this shows it too.

    python bench/consensus_platform.py --images 300 --seeds 1 2 3 --spammers 0.2 --colluders 0.02
    python bench/consensus_platform.py --quick      # 150 images, one seed

Every vote counts in votes/img, calibration votes included. Questions still undecided at the vote cap go to
review and count as misses in recall until a reviewer decides them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_PRECISION = 0.997
MAJORITIES = (3, 5, 7, 9, 11)


@dataclass
class Pooled:
    """A rule's runs pooled over seeds: precision over every accepted label, recall over every true one."""

    accepted: int = 0
    false_positives: int = 0
    true_candidates: int = 0
    images: int = 0
    votes: float = 0.0
    review: int = 0
    seconds: float = 0.0

    def add(self, run: dict) -> None:
        self.accepted += run["accepted"]
        self.false_positives += run["false_positives"]
        self.true_candidates += run["candidates_true"]
        self.images += run["images"]
        self.votes += run["votes_per_image"] * run["images"]
        self.review += run["review"]
        self.seconds += run["worker_seconds_per_image"] * run["images"]

    @property
    def precision(self) -> float:
        return 1.0 - self.false_positives / self.accepted if self.accepted else 1.0

    @property
    def recall(self) -> float:
        return (self.accepted - self.false_positives) / self.true_candidates if self.true_candidates else 0.0

    @property
    def votes_per_image(self) -> float:
        return self.votes / self.images


def simulate(rule: str, seed: int, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp}/bench.sqlite3"}
        manage = [sys.executable, str(ROOT / "manage.py")]
        subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
        out = subprocess.run(
            [
                *manage,
                "simulate",
                "--scenario=verify",
                f"--images={args.images}",
                f"--synsets={args.synsets}",
                f"--workers={args.workers}",
                "--image-size=64x64",
                f"--seed={seed}",
                f"--consensus={rule}",
                f"--spammers={args.spammers}",
                f"--colluders={args.colluders}",
                "--no-progress",
            ],
            env=env,
            check=True,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        return json.loads(out.stdout)


def row(name: str, p: Pooled, note: str = "") -> str:
    return (
        f"{name:<11} {100 * p.precision:9.2f}% {100 * p.recall:7.2f}% {p.votes_per_image:9.2f}"
        f" {p.seconds / p.images:9.1f} {p.review:7d} {p.false_positives:4d}  {note}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=300)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--synsets", type=int, default=2)
    parser.add_argument("--workers", type=int, default=60)
    parser.add_argument("--spammers", type=float, default=0.2)
    parser.add_argument("--colluders", type=float, default=0.02)
    parser.add_argument("--rules", nargs="+", default=["dynamic", "weighted"])
    parser.add_argument("--quick", action="store_true", help="150 images, seed 1")
    args = parser.parse_args()
    if args.quick:
        args.images, args.seeds = 150, [1]
    pooled: dict[str, Pooled] = {}
    for rule in [*args.rules, *(f"majority{n}" for n in MAJORITIES)]:
        for seed in args.seeds:
            run = simulate(rule, seed, args)
            pooled.setdefault(rule, Pooled()).add(run)
            print(
                f"  {rule} seed {seed}: precision {run['precision']} recall {run['recall']}"
                f" votes/img {run['votes_per_image']} review {run['review']}",
                file=sys.stderr,
            )
    print(
        f"verify through the platform: {args.images} images x {len(args.seeds)} seed(s) {args.seeds},"
        f" {args.synsets} synsets, {args.workers} workers, spammers {args.spammers}, colluders {args.colluders}"
    )
    print(
        f"{'rule':<11} {'precision':>10} {'recall':>8} {'votes/img':>9} {'w-s/img':>9} {'review':>7} {'FP':>4}"
    )
    for name, p in pooled.items():
        print(row(name, p))
    majorities = {name: p for name, p in pooled.items() if name.startswith("majority")}
    for rule in args.rules:
        p = pooled[rule]
        for label, bar in (("its precision", p.precision), ("the target", TARGET_PRECISION)):
            reaching = [(m.votes_per_image, name) for name, m in majorities.items() if m.precision >= bar]
            if not reaching:
                print(f"{rule}: no majority up to {MAJORITIES[-1]} reaches {label} ({100 * bar:.2f}%)")
                continue
            votes, name = min(reaching)
            saving = 1.0 - p.votes_per_image / votes
            print(
                f"{rule}: cheapest majority reaching {label} ({100 * bar:.2f}%) is {name} at {votes:.2f} votes/img;"
                f" {rule} uses {p.votes_per_image:.2f} ({100 * saving:+.1f}% fewer)"
            )


if __name__ == "__main__":
    main()
