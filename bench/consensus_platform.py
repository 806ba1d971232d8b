"""Dynamic and weighted consensus against fixed majorities *through the platform*: each rule runs
`manage.py simulate --scenario verify` (HTTP API, queue, calibration, stopping rule) on the same seeded crowd,
each run on a fresh SQLite database, and each (crowd, seed) is printed with every rule side by side: precision,
recall, votes per image, reviewer items per 100 questions, and for each consensus rule the cheapest fixed
majority (up to 13) reaching its precision, with issue 33's targets checked on that seed. A saving shown by the
pure models (bench/consensus_cost.py, bench/consensus_crowd_model.py) counts only once this shows it too.

    python bench/consensus_platform.py --crowds default hostile --seeds 1 2 3 4 5 6 7 8 --cache .bench-cache
    python bench/consensus_platform.py --quick      # 150 images, one seed, the default crowd

Every vote counts in votes/img, calibration votes included. Questions left in review count as misses in recall
(no reviewer decides them here). `--cache DIR` keeps each run's JSON summary, so a later call reuses the runs
(majorities do not depend on the consensus code) and an interrupted measurement resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_PRECISION = 0.997
TARGET_RECALL = 0.95
TARGET_VOTE_SHARE = 0.70
TARGET_REVIEW_PER_100 = 2.0
MAJORITIES = (3, 5, 7, 9, 11, 13)


@dataclass
class Run:
    accepted: int
    false_positives: int
    true_candidates: int
    questions: int
    votes: float
    review: int

    @classmethod
    def of(cls, summary: dict) -> Run:
        return cls(
            accepted=summary["accepted"],
            false_positives=summary["false_positives"],
            true_candidates=summary["candidates_true"],
            questions=summary["images"],  # one candidate question per image
            votes=summary["votes_per_image"] * summary["images"],
            review=summary["review"],
        )

    def __add__(self, other: Run) -> Run:
        return Run(*(a + b for a, b in zip(self.__dict__.values(), other.__dict__.values(), strict=True)))

    @property
    def precision(self) -> float:
        return 1.0 - self.false_positives / self.accepted if self.accepted else 1.0

    @property
    def recall(self) -> float:
        return (self.accepted - self.false_positives) / self.true_candidates if self.true_candidates else 0.0

    @property
    def votes_per_image(self) -> float:
        return self.votes / self.questions

    @property
    def review_per_100(self) -> float:
        return 100.0 * self.review / self.questions


def cache_file(crowd: str, rule: str, seed: int, args: argparse.Namespace) -> Path | None:
    name = f"{crowd}-{rule}-{seed}-{args.images}x{args.synsets}x{args.workers}.json"
    return args.cache / name if args.cache else None


def migrated_template(directory: Path) -> Path:
    """One migrated empty SQLite database that every run starts from as a copy (migrating costs each run about
    half a minute of CPU)."""
    template = directory / "template.sqlite3"
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{template}",
        "CROWDLABEL_MEDIA_ROOT": f"{directory}/media",
    }
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    return template


def simulate(crowd: str, rule: str, seed: int, args: argparse.Namespace) -> dict:
    cached = cache_file(crowd, rule, seed, args)
    if cached is not None and cached.exists():
        return json.loads(cached.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{tmp}/bench.sqlite3",
            "CROWDLABEL_MEDIA_ROOT": f"{tmp}/media",
        }
        manage = [sys.executable, str(ROOT / "manage.py")]
        shutil.copyfile(args.template, f"{tmp}/bench.sqlite3")
        out = subprocess.run(
            [
                *manage,
                "simulate",
                "--scenario=verify",
                f"--crowd={crowd}",
                f"--images={args.images}",
                f"--synsets={args.synsets}",
                f"--workers={args.workers}",
                "--image-size=64x64",
                f"--seed={seed}",
                f"--consensus={rule}",
                "--no-progress",
            ],
            env=env,
            check=True,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
    summary = json.loads(out.stdout)
    if cached is not None:
        args.cache.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(summary))
    return summary


def cheapest_majority(runs: dict[str, Run], bar: float) -> tuple[str, Run]:
    """The fixed majority with the fewest votes per image reaching precision `bar`, else the largest measured."""
    majorities = {name: run for name, run in runs.items() if name.startswith("majority")}
    reaching = [(r.votes_per_image, name) for name, r in majorities.items() if r.precision >= bar]
    name = min(reaching)[1] if reaching else max(majorities, key=lambda n: int(n[8:]))
    return name, majorities[name]


def table(title: str, runs: dict[str, Run], rules: list[str]) -> list[str]:
    lines = [
        title,
        f"  {'rule':<11} {'precision':>9} {'recall':>7} {'votes/img':>9} {'review/100q':>11} {'FP':>4}"
        "  vs cheapest majority at its precision; targets",
    ]
    majorities = [p.precision for name, p in runs.items() if name.startswith("majority")]
    best_majority = max(majorities, default=float("nan"))
    for name, r in runs.items():
        note = ""
        if name in rules and majorities:
            m_name, m = cheapest_majority(runs, r.precision)
            share = r.votes_per_image / m.votes_per_image
            held = {
                "P>=0.997": r.precision >= TARGET_PRECISION,
                "P>=majorities": r.precision >= best_majority,
                "R>=0.95": r.recall >= TARGET_RECALL,
                "votes<=70%": share <= TARGET_VOTE_SHARE,
                "review<=2": r.review_per_100 <= TARGET_REVIEW_PER_100,
            }
            missed = [k for k, ok in held.items() if not ok]
            note = f"  {m_name} {m.votes_per_image:.2f} -> {100 * share:.0f}%; " + (
                "all targets hold" if not missed else "misses " + ", ".join(missed)
            )
        lines.append(
            f"  {name:<11} {r.precision:9.4f} {r.recall:7.4f} {r.votes_per_image:9.2f}"
            f" {r.review_per_100:11.2f} {r.false_positives:4d}{note}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=600)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--synsets", type=int, default=2)
    parser.add_argument("--workers", type=int, default=60)
    parser.add_argument("--crowds", nargs="+", default=["default", "hostile"])
    parser.add_argument("--rules", nargs="*", default=["dynamic", "weighted"])
    parser.add_argument("--majorities", type=int, nargs="*", default=list(MAJORITIES))
    parser.add_argument("--cache", type=Path, default=None, help="keep (and reuse) each run's summary here")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time")
    parser.add_argument(
        "--cached-only", action="store_true", help="print only the runs --cache holds (run nothing)"
    )
    parser.add_argument("--quick", action="store_true", help="150 images, seed 1, the default crowd")
    args = parser.parse_args()
    if args.quick:
        args.images, args.seeds, args.crowds = 150, [1], ["default"]
    rules = [*args.rules, *(f"majority{n}" for n in args.majorities)]
    plan = [(crowd, seed, rule) for crowd in args.crowds for seed in args.seeds for rule in rules]
    if args.cached_only:
        plan = [(c, s, r) for c, s, r in plan if (f := cache_file(c, r, s, args)) is not None and f.exists()]

    def one(item: tuple[str, int, str]) -> tuple[tuple[str, int, str], dict]:
        crowd, seed, rule = item
        summary = simulate(crowd, rule, seed, args)
        print(
            f"  {crowd} seed {seed} {rule}: precision {summary['precision']} recall {summary['recall']}"
            f" votes/img {summary['votes_per_image']} review {summary['review']}",
            file=sys.stderr,
            flush=True,
        )
        return item, summary

    with tempfile.TemporaryDirectory() as template_dir:
        if any(not ((f := cache_file(c, r, s, args)) and f.exists()) for c, s, r in plan):
            args.template = migrated_template(Path(template_dir))
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = dict(pool.map(one, plan))
    print(
        f"verify through the platform: {args.images} images, {args.synsets} synsets, {args.workers} workers,"
        f" 64x64; seeds {args.seeds}"
    )
    for crowd in args.crowds:
        pooled: dict[str, Run] = {}
        for seed in args.seeds:
            runs = {
                rule: Run.of(results[(crowd, seed, rule)]) for rule in rules if (crowd, seed, rule) in results
            }
            print("\n".join(table(f"{crowd} crowd, seed {seed}", runs, args.rules)))
            for rule, r in runs.items():
                pooled[rule] = pooled[rule] + r if rule in pooled else r
        if len(args.seeds) > 1:
            print("\n".join(table(f"{crowd} crowd, {len(args.seeds)} seeds pooled", pooled, args.rules)))


if __name__ == "__main__":
    main()
