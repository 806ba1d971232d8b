"""The `verify` scenario: candidate (image, synset) pairs, noisy like search-engine results, verified by
yes/no votes (ImageNet's image verification, ILSVRC §3.1.3).

`consensus` picks the rule: "dynamic" (per-synset calibration tables, the default) or "weighted"
(Dawid-Skene worker reliability) through the consensus API, or "majorityN" (the plain binary vote kind with a
fixed majority of N). Every vote the crowd casts counts in votes_per_image, calibration votes included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from crowd.driver import OrganizerApi, Stats, rounded
from crowd.ground_truth import label_precision_recall
from crowd.scenes import Scene, SceneClass, SceneSpec, generate_scenes
from crowd.simulated import Crowd, SimulatedWorker, TaskKind, answer_binary, answer_seconds

CONSENSUS_RULES = ("dynamic", "weighted", "majority3", "majority5", "majority7")


@dataclass
class VerifyScenario:
    classes: list[SceneClass]
    crowd: Crowd
    n_images: int
    seed: int
    positive_rate: float = 0.6
    consensus: str = "dynamic"
    # Verification needs no detail: small scenes keep generation and upload fast; None = SceneSpec's sizes.
    image_size: tuple[int, int] | None = None
    name: str = "verify"

    def __post_init__(self) -> None:
        if not 0.0 <= self.positive_rate <= 1.0:
            raise ValueError("--positive-rate must be between 0 and 1")
        match = re.fullmatch(r"majority(\d+)", self.consensus)
        if self.consensus not in ("dynamic", "weighted") and not (match and int(match.group(1)) >= 1):
            raise ValueError(f"--consensus must be one of {', '.join(CONSENSUS_RULES)} (or majorityN)")
        self.majority = int(match.group(1)) if match else None
        self.kinds: tuple[str, ...] = ("binary_vote",) if self.majority else ("question",)
        spec = SceneSpec(n_images=self.n_images, seed=self.seed)
        if self.image_size is not None:
            w, h = self.image_size
            spec = SceneSpec(n_images=self.n_images, seed=self.seed, width_range=(w, w), height_range=(h, h))
        self.scenes: list[Scene] = generate_scenes(self.classes, spec)
        self.image_scene: dict[int, Scene] = {}
        self.candidates: list[tuple[int, str]] = []  # (scene index, class key)

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
        index_to_image = {name_to_index[name]: image_id for name, image_id in ids.items()}
        self.index_to_image = index_to_image
        self.candidates = self._choose_candidates()
        by_concept: dict[str, list[int]] = {}
        for index, key in self.candidates:
            by_concept.setdefault(key, []).append(index_to_image[index])
        if self.majority is None:
            api.call(
                "PATCH",
                f"/api/v1/datasets/{api.dataset_id}/consensus-settings/",
                json_body={"estimator": self.consensus, "seed": self.seed},
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

    def answer(self, worker: SimulatedWorker, assignment: dict) -> tuple[dict | None, float]:
        task = assignment["task"]
        scene = self.image_scene[task["image"]["id"]]
        key = task["payload"]["concept"]["wnid"]
        present = sorted(scene.class_keys)
        truth = key in scene.class_keys
        yes = answer_binary(worker, truth, self.crowd.difficulty(worker, key, present))
        return {"answer": yes}, answer_seconds(worker, TaskKind.VERIFY)

    def work_pending(self, api: OrganizerApi) -> bool:
        """Questions still waiting for a calibration table that a background worker is building."""
        if self.majority is not None:
            return False
        data = api.call(
            "GET", f"/api/v1/datasets/{api.dataset_id}/decisions/", params={"state": "waiting"}
        ).expect(200)
        return bool(data["count"])

    def _outcomes(self, api: OrganizerApi) -> tuple[set[tuple[int, str]], int, int]:
        """(accepted (image, concept) pairs, decided questions, questions sent to review)."""
        if self.majority is not None:
            results = api.paged(f"/api/v1/datasets/{api.dataset_id}/vote-results/")
            accepted = {
                (r["image"], r["concept"])
                for r in results
                if r["result"] and r["result"].get("answer") is True
            }
            decided = sum(
                1 for r in results if r["state"] == "done" and r["result"].get("answer") is not None
            )
            return accepted, decided, sum(1 for r in results if r["state"] == "done") - decided
        rows = api.paged(f"/api/v1/datasets/{api.dataset_id}/decisions/")
        accepted = {(r["image"], r["concept"]) for r in rows if r["state"] == "accepted"}
        decided = sum(1 for r in rows if r["state"] in ("accepted", "rejected"))
        return accepted, decided, sum(1 for r in rows if r["state"] == "review")

    def summarize(self, api: OrganizerApi, stats: Stats) -> dict[str, Any]:
        accepted, decided, review = self._outcomes(api)
        truth = {
            (self.index_to_image[index], key)
            for index, key in self.candidates
            if key in self.scenes[index].class_keys
        }
        score = label_precision_recall(accepted, truth)
        n = len(self.scenes)
        return {
            "precision": rounded(score.precision),
            "recall": rounded(score.recall),
            "votes_per_image": rounded(stats.tasks_answered / n),
            "questions_per_image": rounded(decided / n),
            "worker_seconds_per_image": rounded(stats.worker_seconds / n, 2),
            "consensus": self.consensus,
            "images": n,
            "synsets": len(self.classes),
            "candidates_true": len(truth),
            "accepted": len(accepted),
            "false_positives": score.false_positives,
            "review": review,
        }
