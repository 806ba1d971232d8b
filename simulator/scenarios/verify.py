"""The `verify` scenario: candidate (image, synset) pairs, noisy like search-engine results, verified by
yes/no votes (ImageNet's image verification, ILSVRC §3.1.3).

`consensus` picks the rule: "weighted" (Dawid-Skene worker reliability, the default) or "dynamic"
(per-synset calibration tables) through the consensus API, or "majorityN" (the plain binary vote kind with a
fixed majority of N). Every vote the crowd casts counts in votes_per_image, calibration votes included.

With `gold_rate` > 0 the organizer seeds gold: a share of the images (`gold_image_share`) are ones the organizer
labeled themselves, so they are held out of production and posted as gold items through the gold API, and the
dataset's gold rate is set through the gold settings API. Gold tasks look like any other to the workers; the
scenario knows which tasks were gold only because it also plays the organizer who chose the gold images.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.driver import OrganizerApi, Stats, rounded
from simulator.ground_truth import label_precision_recall
from simulator.scenarios.finishing import Finisher, Operator, decide_item
from simulator.scenes import Scene, SceneClass, SceneSpec, generate_scenes
from simulator.simulated import Crowd, SimulatedWorker, TaskKind, answer_binary, answer_seconds

CONSENSUS_RULES = ("dynamic", "weighted", *(f"majority{n}" for n in range(3, 16, 2)))


@dataclass
class VerifyScenario:
    classes: list[SceneClass]
    crowd: Crowd
    n_images: int
    seed: int
    positive_rate: float = 0.6
    consensus: str = "weighted"
    # The organizer's second cap (consensus/extension.py): a question undecided at the vote cap asks the most
    # reliable workers on, up to this many votes, before it is settled or reviewed (issue 33's measurements).
    extension_cap: int | None = None  # the dataset's second vote cap; None: the platform's default (20)
    # Verification needs no detail: small scenes keep generation and upload fast; None = SceneSpec's sizes.
    image_size: tuple[int, int] | None = None
    name: str = "verify"
    gold_rate: float = 0.0  # share of a qualified worker's tasks that are gold (0: no gold at all)
    gold_image_share: float = 0.2  # images the organizer labeled themselves, used as gold when gold_rate > 0
    gold_answers: dict[str, int] = field(default_factory=dict)  # simulated worker id -> gold tasks answered
    assignment_worker: dict[int, str] = field(default_factory=dict)  # assignment id -> simulated worker id
    # Run as a deployment runs (simulator.scenarios.finishing): the sweep, then an in-house reviewer deciding what the
    # crowd could not. Without an operator the run stops when the crowd runs dry.
    operator: Operator | None = None
    reviewer_token: str | None = None
    log: Callable[[str], None] | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.positive_rate <= 1.0:
            raise ValueError("--positive-rate must be between 0 and 1")
        if not 0.0 <= self.gold_rate < 1.0:
            raise ValueError("--gold-rate must be in [0, 1)")
        if not 0.0 < self.gold_image_share < 1.0:
            raise ValueError("the gold image share must be between 0 and 1")
        match = re.fullmatch(r"majority(\d+)", self.consensus)
        if self.consensus not in ("dynamic", "weighted") and not (match and int(match.group(1)) >= 1):
            raise ValueError(f"--consensus must be one of {', '.join(CONSENSUS_RULES)} (or majorityN)")
        self.majority = int(match.group(1)) if match else None
        if self.gold_rate and self.majority is not None:
            raise ValueError("--gold-rate needs consensus questions (dynamic or weighted), not majorityN")
        self.kinds: tuple[str, ...] = ("binary_vote",) if self.majority else ("question",)
        spec = SceneSpec(n_images=self.n_images, seed=self.seed)
        if self.image_size is not None:
            w, h = self.image_size
            spec = SceneSpec(n_images=self.n_images, seed=self.seed, width_range=(w, w), height_range=(h, h))
        self.scenes: list[Scene] = generate_scenes(self.classes, spec)
        self.image_scene: dict[int, Scene] = {}
        self.image_of_ref: dict[str, int] = {}  # a lease's task.image.ref -> the image id uploading gave
        self.candidates: list[tuple[int, str]] = []  # (scene index, class key)
        self.gold_indices: set[int] = set()  # scenes the organizer labeled themselves (gold, not production)
        self.gold_images: set[int] = set()
        self.finisher = Finisher(
            self.operator,
            self.reviewer_token,
            lambda item: decide_item(item, self.image_scene, {}),
            np.random.default_rng([self.seed, 0x4E71]),
            log=self.log,
        )

    def run(self, api: OrganizerApi, work: Callable[[], Stats]) -> None:
        """The crowd works until no task is left, the sweep settles what nobody left can answer, and the
        reviewer decides what went to review (the crowd working on whatever that opens)."""
        self.finisher.finish(api, work)

    def _choose_candidates(self) -> list[tuple[int, str]]:
        """One candidate synset per image: a class it shows with probability `positive_rate`, else one it
        does not show (a search engine's false hit)."""
        rng = np.random.default_rng([self.seed, 0x7E5])
        keys = [c.key for c in self.classes]
        chosen = []
        for scene in self.scenes:
            present = sorted(scene.class_keys)
            absent = [k for k in keys if k not in scene.class_keys]
            if present and (not absent or rng.random() < self.positive_rate):
                chosen.append((scene.index, present[int(rng.integers(len(present)))]))
            else:
                chosen.append((scene.index, absent[int(rng.integers(len(absent)))]))
        return chosen

    def setup(self, api: OrganizerApi) -> None:
        files = [(f"scene-{s.index:05d}.{s.image_format.lower()}", s.image_bytes) for s in self.scenes]
        ids = api.upload(files)
        by_index = {s.index: s for s in self.scenes}
        name_to_index = {name: int(name.split("-")[1].split(".")[0]) for name, _ in files}
        self.image_scene = {image_id: by_index[name_to_index[name]] for name, image_id in ids.items()}
        self.image_of_ref = api.image_of_ref
        index_to_image = {name_to_index[name]: image_id for name, image_id in ids.items()}
        self.index_to_image = index_to_image
        self.candidates = self._choose_candidates()
        if self.gold_rate:
            self._seed_gold(api)
        by_concept: dict[str, list[int]] = {}
        for index, key in self.candidates:
            by_concept.setdefault(key, []).append(index_to_image[index])
        if self.majority is None:
            api.call(
                "PATCH",
                f"/api/v1/datasets/{api.dataset_id}/consensus-settings/",
                json_body={"estimator": self.consensus, "seed": self.seed}
                | ({} if self.extension_cap is None else {"extension_cap": self.extension_cap}),
            ).expect(200)
        for key in sorted(by_concept):
            if self.majority is not None:
                path, body = "vote-tasks", {"answers_wanted": self.majority}
            else:
                # A fresh calibration subset per run, so runs with the same seed measure the same thing even
                # when an earlier run left a table for the synset.
                path, body = "verification", {"calibrate": True}
            api.call(
                "POST",
                f"/api/v1/datasets/{api.dataset_id}/{path}/",
                json_body={"concept": key, "images": by_concept[key], **body},
            ).expect(201)

    def _seed_gold(self, api: OrganizerApi) -> None:
        """The organizer labeled a share of the images themselves: those candidates become gold items (with the
        true answer) instead of production questions, and the dataset's gold rate is set."""
        rng = np.random.default_rng([self.seed, 0x601D])
        n_gold = max(1, round(len(self.candidates) * self.gold_image_share))
        picked = rng.choice(len(self.candidates), size=n_gold, replace=False)
        gold = [self.candidates[int(i)] for i in sorted(picked)]
        self.gold_indices = {index for index, _ in gold}
        self.gold_images = {self.index_to_image[index] for index in self.gold_indices}
        self.candidates = [c for c in self.candidates if c[0] not in self.gold_indices]
        for index, key in gold:
            api.call(
                "POST",
                f"/api/v1/datasets/{api.dataset_id}/gold/",
                json_body={
                    "kind": "image_verify",
                    "concept": key,
                    "image": self.index_to_image[index],
                    "answer": key in self.scenes[index].class_keys,
                },
            ).expect(201)
        api.call(
            "PATCH",
            f"/api/v1/datasets/{api.dataset_id}/gold-settings/",
            json_body={"rate": self.gold_rate, "seed": self.seed},
        ).expect(200)

    def answer(self, worker: SimulatedWorker, assignment: dict) -> tuple[dict | None, float]:
        task = assignment["task"]
        image_id = self.image_of_ref[task["image"]["ref"]]
        scene = self.image_scene[image_id]
        key = task["payload"]["concept"]["wnid"]
        present = sorted(scene.class_keys)
        truth = key in scene.class_keys
        yes = answer_binary(
            worker, truth, self.crowd.difficulty(worker, key, present), question_key=(image_id, key)
        )
        self.assignment_worker[assignment["id"]] = worker.worker_id
        if image_id in self.gold_images:
            self.gold_answers[worker.worker_id] = self.gold_answers.get(worker.worker_id, 0) + 1
        return {"answer": yes}, answer_seconds(worker, TaskKind.VERIFY)

    def work_pending(self, api: OrganizerApi) -> bool:
        """Questions still waiting for a calibration table that a background worker is building."""
        if self.majority is not None:
            return False
        data = api.call(
            "GET", f"/api/v1/datasets/{api.dataset_id}/decisions/", params={"state": "waiting"}
        ).expect(200)
        return bool(data["count"])

    def _outcomes(self, api: OrganizerApi) -> tuple[set[tuple[int, str]], set[tuple[int, str]], int]:
        """(accepted (image, concept) pairs, decided pairs, questions in review now)."""
        if self.majority is not None:
            results = api.paged(f"/api/v1/datasets/{api.dataset_id}/vote-results/")
            accepted = {
                (r["image"], r["concept"])
                for r in results
                if r["result"] and r["result"].get("answer") is True
            }
            decided = {
                (r["image"], r["concept"])
                for r in results
                if r["state"] == "done" and r["result"].get("answer") is not None
            }
            return accepted, decided, sum(1 for r in results if r["state"] == "done") - len(decided)
        rows = api.paged(f"/api/v1/datasets/{api.dataset_id}/decisions/")
        accepted = {(r["image"], r["concept"]) for r in rows if r["state"] == "accepted"}
        decided = {(r["image"], r["concept"]) for r in rows if r["state"] in ("accepted", "rejected")}
        return accepted, decided, sum(1 for r in rows if r["state"] == "review")

    def summarize(self, api: OrganizerApi, stats: Stats) -> dict[str, Any]:
        accepted, decided, review = self._outcomes(api)
        pairs = {(self.index_to_image[index], key) for index, key in self.candidates}
        # Scored on the candidates the platform finished; the rest are counted apart, not as misses.
        truth = {
            (self.index_to_image[index], key)
            for index, key in self.candidates
            if key in self.scenes[index].class_keys and (self.index_to_image[index], key) in decided
        }
        score = label_precision_recall(accepted, truth)
        reviewed = self.finisher.decided_by_asks.get("image_verify", 0)
        n = len(self.scenes) - len(self.gold_indices)  # production images
        gold = self._gold_summary(api, stats) if self.gold_rate else {}
        return {
            "precision": rounded(score.precision),
            "recall": rounded(score.recall),
            "votes_per_image": rounded(stats.tasks_answered / n),
            "questions_per_image": rounded(len(decided) / n),
            "worker_seconds_per_image": rounded(stats.worker_seconds / n, 2),
            "consensus": self.consensus,
            "images": n,
            "synsets": len(self.classes),
            "candidates_true": len(truth),
            "accepted": len(accepted),
            "false_positives": score.false_positives,
            # Questions left to a person: decided by the in-house reviewer, or still waiting for one.
            "review": review + reviewed,
            "review_per_100_questions": rounded(100 * (review + reviewed) / max(len(pairs), 1), 2),
            "unfinished": len(pairs - decided),
            "reviewer": self.finisher.summary(),
            **gold,
        }

    def _gold_summary(self, api: OrganizerApi, stats: Stats) -> dict[str, Any]:
        """Gold overhead and who got blocked. The platform's worker ids come from the payment listing (each row
        names the assignment and its worker), matched to the assignments each simulated worker answered."""
        api.call("POST", f"/api/v1/datasets/{api.dataset_id}/payments/decide/").expect(200)
        platform_to_sim: dict[int, str] = {}
        for row in api.paged(f"/api/v1/datasets/{api.dataset_id}/payments/"):
            sim = self.assignment_worker.get(row["assignment"])
            if sim is not None:
                platform_to_sim[row["worker"]] = sim
        blocked_at: dict[str, int] = {}
        for row in api.paged(f"/api/v1/datasets/{api.dataset_id}/workers/"):
            if row["blocked"] and row["worker"] in platform_to_sim:
                blocked_at[platform_to_sim[row["worker"]]] = row["answered"]
        spammers = {w.worker_id for w in self.crowd if w.profile.is_spammer}
        to_block = [n for sim, n in blocked_at.items() if sim in spammers]
        served = sum(self.gold_answers.values())
        return {
            "gold_rate": self.gold_rate,
            "gold_items": len(self.gold_indices),
            "gold_share": rounded(served / stats.tasks_answered) if stats.tasks_answered else None,
            "spammers": len(spammers),
            "blocked_spammers": len(to_block),
            "blocked_honest": len(blocked_at) - len(to_block),
            "median_gold_to_block": float(np.median(to_block)) if to_block else None,
        }
