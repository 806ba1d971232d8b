"""Find flaky tests before a user does: run tests several times, each in its own random order, and list every
test that did not pass every time (`make flakes`).

A run is ``pytest -p randomly --randomly-seed=SEED -p no:cacheprovider --junitxml=...``: pytest-randomly shuffles
the modules, the classes and the tests in them and reseeds ``random`` (and numpy, Faker, factory_boy) per test
with the run's seed, so a test that depends on the order of others, on a shared process-wide cache or on a lucky
draw fails in some runs and not in others. Every run's seed is printed: ``pytest -p randomly
--randomly-seed=SEED`` replays that order.

    python tests/flake_hunt.py --runs 3                       # the whole suite, three random orders
    python tests/flake_hunt.py --runs 5 --changed main        # only the test files changed since main
    python tests/flake_hunt.py --runs 2 -- tests/consensus -x # pytest arguments after --

Exits 1 when any test failed or errored in any run (a test that failed every time is listed too: it is
broken, not flaky), 0 when every test passed in every run.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parent.parent


def changed_test_files(base: str) -> list[str]:
    """Test modules changed since `base` (committed or not) that still exist."""
    names = subprocess.run(
        ["git", "diff", "--name-only", base, "--", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return sorted({n for n in names if Path(n).name.startswith("test_") and (ROOT / n).exists()})


def outcomes(junit: Path) -> dict[str, str]:
    """test id -> passed | failed | error | skipped, from one run's JUnit XML."""
    result = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        if "failure" in kinds:
            result[name] = "failed"
        elif "error" in kinds:
            result[name] = "error"
        elif "skipped" in kinds:
            result[name] = "skipped"
        else:
            result[name] = "passed"
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="how many random orders (default 3)")
    parser.add_argument(
        "--changed", metavar="BASE", help="only the test files changed since this git revision"
    )
    parser.add_argument("--seed", type=int, help="first run's seed (default: random); run k uses seed + k")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    targets = list(args.pytest_args)
    if args.changed:
        files = changed_test_files(args.changed)
        if not files:
            print(f"no test file changed since {args.changed}: nothing to run")
            return 0
        targets += files
    first_seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**9)
    seen: dict[str, list[str]] = defaultdict(list)
    seeds = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.runs):
            seed = first_seed + k
            seeds.append(seed)
            junit = Path(tmp) / f"run-{k}.xml"
            command = [sys.executable, "-m", "pytest", "-p", "randomly", f"--randomly-seed={seed}"]
            command += ["-p", "no:cacheprovider", "-q", f"--junitxml={junit}", *targets]
            print(f"== run {k + 1} of {args.runs}: seed {seed}", flush=True)
            started = time.monotonic()
            code = subprocess.run(command, cwd=ROOT).returncode
            print(f"== run {k + 1}: exit {code} in {time.monotonic() - started:.0f} s", flush=True)
            if not junit.exists():
                print(f"run {k + 1} wrote no report (exit {code}): pytest could not start", file=sys.stderr)
                return 2
            for name, outcome in outcomes(junit).items():
                seen[name].append(f"{outcome}@{seed}")
    bad = {name: runs for name, runs in seen.items() if any(r.startswith(("failed", "error")) for r in runs)}
    print(f"\n{len(seen)} tests, {args.runs} random orders (seeds {', '.join(map(str, seeds))})")
    if not bad:
        print("every test passed (or was skipped) in every run")
        return 0
    for name, runs in sorted(bad.items()):
        always = all(r.startswith(("failed", "error")) for r in runs)
        print(f"{'BROKEN' if always else 'FLAKY '} {name}: {' '.join(runs)}")
    print(
        f"{len(bad)} tests did not pass every time; replay one order with: pytest -p randomly --randomly-seed=SEED"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
