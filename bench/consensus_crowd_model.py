"""The verify scenario's consensus, without the platform: the simulator's own crowd (`simulator/simulated.py`,
default or hostile) answers the same candidates in the same order the queue serves them (rounds of workers in
a seeded order, each taking the first open question it has not answered, calibration questions first), and
the estimators of `consensus/` decide after every vote. Fast enough to compare estimators and caps on many
seeds before confirming a saving through the platform (bench/consensus_platform.py).

    python bench/consensus_crowd_model.py --crowd hostile --seeds 1 2 3 --estimators weighted dynamic
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from consensus.calibration import build_table, calibration_sample_size  # noqa: E402
from consensus.evidence_table import build_evidence_table, evidence, prefix_evidence  # noqa: E402
from consensus.reliability import fit_dawid_skene, fit_item_difficulty, posterior_positive  # noqa: E402
from consensus.standing import standing_counts, standing_of  # noqa: E402
from consensus.stopping import (  # noqa: E402
    DecidedSoFar,
    Decision,
    settle_at_cap,
    thresholds_for_precision,
)
from simulator.scenes import SceneClass, SceneSpec, generate_scenes  # noqa: E402
from simulator.simulated import Crowd, answer_binary, confusable_pairs, crowd_spec  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Question:
    index: int
    concept: str
    truth: bool
    present: list[str]
    calibration: bool
    workers: list[int] = field(default_factory=list)
    answers: list[bool] = field(default_factory=list)
    state: str = "open"
    p: float = float("nan")
    cap: int = 12


def leaf_keys(n: int) -> tuple[list[str], list[list[str]]]:
    data = json.loads((ROOT / "fixtures/hierarchies/voc20.json").read_text())
    leaves = [node for node in data["nodes"] if node.get("leaf")][:n]
    groups: dict[str, list[str]] = {}
    for i, node in enumerate(leaves):
        groups.setdefault((node.get("parents") or [f"chunk-{i // 4}"])[0], []).append(node["id"])
    return [node["id"] for node in leaves], list(groups.values())


def run(args: argparse.Namespace, seed: int, estimator: str) -> dict:
    keys, groups = leaf_keys(args.synsets)
    hostile = args.crowd == "hostile"
    crowd = Crowd.build(
        crowd_spec(args.crowd, n_workers=args.workers, seed=seed),
        class_keys=keys,
        confusable_pairs=confusable_pairs(groups, seed) if hostile else (),
    )
    spec = SceneSpec(n_images=args.images, seed=seed, width_range=(64, 64), height_range=(64, 64))
    scenes = generate_scenes([SceneClass(k) for k in keys], spec)
    rng = np.random.default_rng([seed, 0x7E5])
    questions: list[Question] = []
    for scene in scenes:
        present = sorted(scene.class_keys)
        absent = [k for k in keys if k not in scene.class_keys]
        if present and (not absent or rng.random() < 0.6):
            key = present[int(rng.integers(len(present)))]
        else:
            key = absent[int(rng.integers(len(absent)))]
        questions.append(Question(len(questions), key, key in scene.class_keys, present, False))
    cal_rng = np.random.default_rng(seed)
    for key in keys:
        mine = [q for q in questions if q.concept == key]
        n = calibration_sample_size(len(mine))
        for i in cal_rng.choice(len(mine), size=n, replace=False):
            mine[int(i)].calibration = True
            mine[int(i)].cap = args.calibration_votes
    majority = int(estimator[8:]) if estimator.startswith("majority") else 0
    if majority:
        for q in questions:
            q.calibration, q.cap = False, majority
    order = sorted(questions, key=lambda q: (not q.calibration, q.index))
    policy = thresholds_for_precision(cap=args.cap)
    votes: list[tuple[int, int, bool]] = []
    fit = None
    fit_at = 0
    tables: dict[str, object] = {}
    so_far: dict[str, DecidedSoFar] = {k: DecidedSoFar() for k in keys}
    review = extended = 0
    standing: list = [None]

    def refit() -> None:
        nonlocal fit, fit_at, tables
        items, workers, answers = (np.asarray(c) for c in zip(*votes, strict=True))
        fit = fit_item_difficulty(fit_dawid_skene(items, workers, answers), items, workers, answers)
        standing[0] = standing_of(fit, items, workers, answers, strength=args.strength, min_j=args.min_j)
        fit_at = len(votes)
        tables = {}

    def table_for(key: str):
        cal = [
            q
            for q in questions
            if q.concept == key and q.calibration and len(q.answers) >= args.calibration_votes
        ]
        if len(cal) < 20:
            return None
        if key not in tables:
            out = standing[0].excluded if (fit is not None and estimator != "counts") else None
            good = None if out is None else (lambda w: w not in out)
            seqs = []
            for q in cal:
                pairs = list(
                    zip(q.workers[: args.calibration_votes], q.answers[: args.calibration_votes], strict=True)
                )
                if good is not None:
                    pairs = [(w, a) for w, a in pairs if good(w)]
                seqs.append([a for _, a in pairs])
            if estimator == "dynamic":
                ex = standing[0].excluded
                pe = [
                    prefix_evidence(
                        fit.reliability,
                        q.workers[: args.calibration_votes],
                        q.answers[: args.calibration_votes],
                        ex,
                    )
                    for q in cal
                ]
                tables[key] = build_evidence_table(
                    [e for e, _ in pe],
                    [v for _, v in pe],
                    excluded=sorted(ex),
                    prior_strength=args.prior_strength,
                )
            else:
                tables[key] = build_table(seqs, cap=args.table_cap)
        return tables[key]

    def p_of(q: Question) -> float:
        if fit is None:
            return float("nan")
        if estimator == "weighted":
            ids = np.asarray([x.index for x in questions if x.concept == q.concept])
            at = np.minimum(np.searchsorted(fit.item_ids, ids), fit.item_ids.size - 1)
            seen = fit.item_ids[at] == ids
            rate = (float(fit.posterior[at[seen]].sum()) + 2 * fit.reliability.prior) / (int(seen.sum()) + 2)
            from dataclasses import replace

            rel = replace(fit.reliability, prior=min(max(rate, 1e-3), 1 - 1e-3))
            return posterior_positive(rel, q.workers, q.answers)
        table = table_for(q.concept)
        if table is None:
            return float("nan")
        if estimator == "dynamic":
            return table.p_positive(evidence(fit.reliability, q.workers, q.answers, standing[0].excluded))
        if estimator == "counts":
            a, b = sum(q.answers), len(q.answers) - sum(q.answers)
        else:
            a, b = standing_counts(q.workers, q.answers, standing[0].excluded)
        if a + b > table.cap:
            return float("nan")
        return table.p_positive(a, b)

    def decide(q: Question) -> None:
        nonlocal review, extended
        n = len(q.answers)
        if majority:
            yes = sum(q.answers)
            if yes >= majority // 2 + 1:
                q.state = "accepted"
            elif n - yes >= majority // 2 + 1:
                q.state = "rejected"
            elif n >= majority:
                q.state = "review"
                review += 1
            return
        if q.calibration and n < args.calibration_votes:
            return
        p = p_of(q)
        q.p = p
        if q.calibration and np.isnan(p):
            q.state = "paused"  # the platform pauses it until its table lands
            return
        if not np.isnan(p) and p >= policy.tau_accept:
            q.state = "accepted"
        elif not np.isnan(p) and p <= policy.tau_reject:
            q.state = "rejected"
        elif n >= q.cap:
            if q.cap < args.cap:
                q.cap = args.cap
                return
            if args.second_cap > q.cap:
                q.cap = args.second_cap
                extended += 1
                return
            d = settle_at_cap(p, so_far[q.concept], policy) if not np.isnan(p) else Decision.REVIEW
            q.state = {Decision.ACCEPT: "accepted", Decision.REJECT: "rejected"}.get(d, "review")
            review += q.state == "review"
        else:
            return
        s = so_far[q.concept]
        if q.state == "accepted":
            so_far[q.concept] = DecidedSoFar(
                s.accepted + 1, s.accepted_risk + 1 - p, s.rejected, s.rejected_risk
            )
        elif q.state == "rejected":
            so_far[q.concept] = DecidedSoFar(s.accepted, s.accepted_risk, s.rejected + 1, s.rejected_risk + p)

    workers = list(crowd.workers)
    round_rng = np.random.default_rng([seed, 0xD21])
    while True:
        worked = False
        for wi in round_rng.permutation(len(workers)):
            worker = workers[int(wi)]
            open_q = [q for q in order if q.state == "open" and len(q.answers) < q.cap]
            chosen = None
            # --good-standing-only: a worker the fit rates out of good standing takes no production question
            # (calibration questions stay open to all, so every worker is still judged).
            withheld = (
                args.good_standing_only
                and not majority
                and fit is not None
                and int(wi) in standing[0].excluded
            )
            for q in open_q:
                if int(wi) in q.workers:
                    continue
                if withheld and not q.calibration:
                    continue
                if len(q.answers) >= args.cap and fit is not None and not majority:
                    if int(wi) not in standing[0].most_reliable(args.extension_share):
                        continue
                chosen = q
                break
            if chosen is None:
                continue
            worked = True
            ans = answer_binary(
                worker,
                chosen.truth,
                crowd.difficulty(worker, chosen.concept, chosen.present),
                question_key=(chosen.index, chosen.concept),
            )
            chosen.workers.append(int(wi))
            chosen.answers.append(bool(ans))
            votes.append((chosen.index, int(wi), bool(ans)))
            if not majority and len(votes) >= 50 and (fit is None or len(votes) > fit_at * 1.05):
                refit()
            decide(chosen)
        paused = [q for q in questions if q.state == "paused"]
        for q in paused:
            q.state = "open"
            if q.cap < args.cap:
                q.cap = args.cap
            decide(q)
        if not worked and not paused:
            break
    unfinished = [q for q in questions if q.state == "open"]
    for q in unfinished:
        review += 1
        q.state = "review"
    accepted = [q for q in questions if q.state == "accepted"]
    fp = sum(not q.truth for q in accepted)
    true = sum(q.truth for q in questions)
    return {
        "estimator": estimator,
        "seed": seed,
        "precision": round(1 - fp / len(accepted), 4) if accepted else 1.0,
        "recall": round((len(accepted) - fp) / true, 4),
        "votes_per_image": round(len(votes) / len(questions), 3),
        "review": review,
        "extended": extended,
        "false_positives": fp,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crowd", default="default")
    parser.add_argument("--images", type=int, default=600)
    parser.add_argument("--synsets", type=int, default=2)
    parser.add_argument("--workers", type=int, default=60)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument(
        "--estimators",
        nargs="+",
        default=["weighted", "dynamic"],
        help="weighted, dynamic (the evidence table), counts-standing (an ILSVRC count table of the votes of "
        "workers in good standing), counts (the ILSVRC count table of every vote), majorityN",
    )
    parser.add_argument("--cap", type=int, default=12)
    parser.add_argument("--second-cap", type=int, default=20)
    parser.add_argument("--extension-share", type=float, default=0.5)
    parser.add_argument("--calibration-votes", type=int, default=10)
    parser.add_argument("--prior-strength", type=float, default=100.0)
    parser.add_argument("--reference", default="majority")
    parser.add_argument("--strength", type=float, default=2.0)
    parser.add_argument("--min-j", type=float, default=0.4)
    parser.add_argument("--table-cap", type=int, default=20)
    parser.add_argument(
        "--good-standing-only",
        action="store_true",
        help="serve production questions only to workers in good standing under the kind's fit (not built on "
        "the platform; docs/consensus.md)",
    )
    args = parser.parse_args()
    for seed in args.seeds:
        for estimator in args.estimators:
            print(json.dumps(run(args, seed, estimator)), flush=True)


if __name__ == "__main__":
    main()
