"""The `verify` scenario: candidate (image, synset) pairs, noisy like search-engine results, verified by
yes/no votes (ImageNet's image verification, ILSVRC §3.1.3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from crowd.driver import OrganizerApi, Stats, rounded
from crowd.ground_truth import label_precision_recall
from crowd.scenes import Scene, SceneClass, SceneSpec, generate_scenes
from crowd.simulated import Crowd, SimulatedWorker, TaskKind, answer_binary, answer_seconds


@dataclass
class VerifyScenario:
    classes: list[SceneClass]
    crowd: Crowd
    n_images: int
    seed: int
    positive_rate: float = 0.6
    votes_per_question: int = 3
    name: str = "verify"
    kinds: tuple[str, ...] = ("binary_vote",)

    def __post_init__(self) -> None:
        if not 0.0 <= self.positive_rate <= 1.0:
            raise ValueError("--positive-rate must be between 0 and 1")
        self.scenes: list[Scene] = generate_scenes(
            self.classes, SceneSpec(n_images=self.n_images, seed=self.seed)
        )
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
        self.candidates = self._choose_candidates()
        by_concept: dict[str, list[int]] = {}
        for index, key in self.candidates:
            by_concept.setdefault(key, []).append(index_to_image[index])
        for key in sorted(by_concept):
            api.call(
                "POST",
                f"/api/v1/datasets/{api.dataset_id}/vote-tasks/",
                json_body={
                    "concept": key,
                    "images": by_concept[key],
                    "answers_wanted": self.votes_per_question,
                },
            ).expect(201)
        self.index_to_image = index_to_image

    def answer(self, worker: SimulatedWorker, assignment: dict) -> tuple[dict | None, float]:
        task = assignment["task"]
        scene = self.image_scene[task["image"]["id"]]
        key = task["payload"]["concept"]["wnid"]
        present = sorted(scene.class_keys)
        truth = key in scene.class_keys
        yes = answer_binary(worker, truth, self.crowd.difficulty(worker, key, present))
        return {"answer": yes}, answer_seconds(worker, TaskKind.VERIFY)

    def summarize(self, api: OrganizerApi, stats: Stats) -> dict[str, Any]:
        results = api.paged(f"/api/v1/datasets/{api.dataset_id}/vote-results/")
        accepted = {
            (r["image"], r["concept"]) for r in results if r["result"] and r["result"].get("answer") is True
        }
        decided = sum(1 for r in results if r["state"] == "done")
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
            "images": n,
            "candidates_true": len(truth),
            "accepted": len(accepted),
        }
