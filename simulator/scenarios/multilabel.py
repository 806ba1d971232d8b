"""The `multilabel` scenario: full multi-label annotation by hierarchical yes/no questions (ILSVRC §3.3.3,
Algorithm 1). Generated scenes over a hierarchy's leaves, where classes under the same top-level question
co-occur; the crowd answers the hierarchy questions through the API; the platform's present classes per image
are scored against the scenes.

The scenario reads the hierarchy fixture as plain JSON (it never imports the platform): it needs only which
leaves lie below each question, to know the true answer a worker would see in the image.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simulator.driver import OrganizerApi, Stats, rounded
from simulator.ground_truth import label_precision_recall
from simulator.scenarios.finishing import Finisher, Operator, decide_item
from simulator.scenes import Scene, SceneClass, SceneSpec, generate_scenes
from simulator.simulated import Crowd, SimulatedWorker, TaskKind, answer_binary, answer_seconds


@dataclass(frozen=True)
class HierarchyFile:
    """What the scenario needs from a hierarchy fixture: its identity, the leaves below each node and the
    top-level questions above each leaf."""

    name: str
    version: str
    leaves: tuple[str, ...]
    leaves_under: dict[str, frozenset[str]]
    roots_above: dict[str, frozenset[str]]

    @classmethod
    def read(cls, path: Path) -> HierarchyFile:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        nodes = data["nodes"]
        parents = {n["id"]: list(n.get("parents", [])) for n in nodes}
        leaves = tuple(n["id"] for n in nodes if n.get("leaf"))
        ancestors: dict[str, set[str]] = {}

        def above(node_id: str, seen: frozenset[str] = frozenset()) -> set[str]:
            if node_id not in ancestors:
                found: set[str] = set()
                for p in parents[node_id]:
                    if p not in seen:  # the platform refuses cycles; do not loop on a broken file
                        found |= {p} | above(p, seen | {node_id})
                ancestors[node_id] = found
            return ancestors[node_id]

        under: dict[str, set[str]] = {n["id"]: set() for n in nodes}
        for leaf in leaves:
            under[leaf].add(leaf)
            for a in above(leaf):
                under[a].add(leaf)
        roots = {leaf: frozenset(a for a in above(leaf) | {leaf} if not parents[a]) for leaf in leaves}
        return cls(
            name=data["name"],
            version=data["version"],
            leaves=leaves,
            leaves_under={k: frozenset(v) for k, v in under.items()},
            roots_above=roots,
        )

    def scene_groups(self, keys: list[str]) -> tuple[tuple[str, ...], ...]:
        """Classes under the same top-level question form a scene group (they co-occur)."""
        groups: dict[str, list[str]] = {}
        for key in keys:
            for root in sorted(self.roots_above.get(key, frozenset({key}))):
                groups.setdefault(root, []).append(key)
        return tuple(tuple(g) for _, g in sorted(groups.items()))


@dataclass
class MultilabelScenario:
    classes: list[SceneClass]
    crowd: Crowd
    n_images: int
    seed: int
    hierarchy_path: Path
    order: str = "breadth_first"
    engine: str = "consensus"  # or "vote": the platform's interim yes-biased sequential vote
    consensus: str = "dynamic"  # the consensus engine's estimator: "dynamic" or "weighted"
    positive_rate: float = 0.6  # verify only
    image_size: tuple[int, int] | None = None  # None = SceneSpec's sizes
    extension_cap: int | None = None  # the dataset's second vote cap; None: the platform's default
    name: str = "multilabel"
    # Run as a deployment runs (simulator.scenarios.finishing): the sweep, then an in-house reviewer deciding what the
    # crowd could not. Without an operator the run stops when the crowd runs dry.
    operator: Operator | None = None
    reviewer_token: str | None = None
    log: Callable[[str], None] | None = None

    def __post_init__(self) -> None:
        if self.engine not in ("consensus", "vote"):
            raise ValueError("--engine must be consensus or vote")
        if self.engine == "consensus" and self.consensus not in ("dynamic", "weighted"):
            raise ValueError("multilabel questions use the consensus engine: --consensus dynamic or weighted")
        self.kinds: tuple[str, ...] = ("question",) if self.engine == "consensus" else ("hierarchy_question",)
        self.hierarchy = HierarchyFile.read(self.hierarchy_path)
        keys = [c.key for c in self.classes]
        unknown = sorted(set(keys) - set(self.hierarchy.leaves))
        if unknown:
            raise ValueError(f"classes that are not leaves of the hierarchy: {unknown[:5]}")
        sizes = {}
        if self.image_size is not None:
            w, h = self.image_size
            sizes = {"width_range": (w, w), "height_range": (h, h)}
        spec = SceneSpec(
            n_images=self.n_images, seed=self.seed, groups=self.hierarchy.scene_groups(keys), **sizes
        )
        self.scenes: list[Scene] = generate_scenes(self.classes, spec)
        self.image_scene: dict[int, Scene] = {}
        self.image_of_ref: dict[str, int] = {}  # a lease's task.image.ref -> the image id uploading gave
        self.finisher = Finisher(
            self.operator,
            self.reviewer_token,
            lambda item: decide_item(item, self.image_scene, self.hierarchy.leaves_under),
            np.random.default_rng([self.seed, 0x4E71]),
            log=self.log,
        )

    def run(self, api: OrganizerApi, work: Callable[[], Stats]) -> None:
        """The crowd works until no task is left, the sweep settles what nobody left can answer, and the
        reviewer decides what went to review (the crowd working on whatever that opens)."""
        self.finisher.finish(api, work)

    def setup(self, api: OrganizerApi) -> None:
        files = [(f"scene-{s.index:05d}.{s.image_format.lower()}", s.image_bytes) for s in self.scenes]
        ids = api.upload(files)
        by_name = {f"scene-{s.index:05d}.{s.image_format.lower()}": s for s in self.scenes}
        self.image_scene = {image_id: by_name[name] for name, image_id in ids.items()}
        self.image_of_ref = api.image_of_ref
        hierarchies = api.paged("/api/v1/hierarchies/")
        match = [
            h
            for h in hierarchies
            if (h["name"], h["version"]) == (self.hierarchy.name, self.hierarchy.version)
        ]
        if not match:
            raise RuntimeError(f"hierarchy {self.hierarchy.name!r} {self.hierarchy.version!r} is not loaded")
        if self.engine == "consensus":  # the estimator is set explicitly, whatever the default
            settings: dict[str, Any] = {"estimator": self.consensus}
            if self.extension_cap is not None:
                settings["extension_cap"] = self.extension_cap
            api.call(
                "PATCH", f"/api/v1/datasets/{api.dataset_id}/consensus-settings/", json_body=settings
            ).expect(200)
        api.call(
            "POST",
            f"/api/v1/datasets/{api.dataset_id}/multilabel/",
            json_body={"hierarchy": match[0]["id"], "order": self.order, "engine": self.engine},
        ).expect(201)

    def answer(self, worker: SimulatedWorker, assignment: dict) -> tuple[dict | None, float]:
        task = assignment["task"]
        scene = self.image_scene[self.image_of_ref[task["image"]["ref"]]]
        node = task["payload"]["concept"]["wnid"]
        truth = bool(self.hierarchy.leaves_under[node] & scene.class_keys)
        # A leaf question is as hard as its class; a high-level question has the crowd's base difficulty.
        difficulty = self.crowd.difficulty(worker, node, sorted(scene.class_keys))
        yes = answer_binary(worker, truth, difficulty)
        return {"answer": yes}, answer_seconds(worker, TaskKind.QUESTION)

    def summarize(self, api: OrganizerApi, stats: Stats) -> dict[str, Any]:
        rows = api.paged(f"/api/v1/datasets/{api.dataset_id}/multilabel/")
        # Scored on the images the platform finished; the rest are counted apart, not as misses.
        done = {r["image"] for r in rows if r["status"] == "done"}
        predicted = {(r["image"], p["wnid"]) for r in rows if r["image"] in done for p in r["present"]}
        truth = {
            (image_id, key)
            for image_id, scene in self.image_scene.items()
            if image_id in done
            for key in scene.class_keys
        }
        score = label_precision_recall(predicted, truth)
        n = len(self.scenes)
        pairs = max(len(done) * len(self.hierarchy.leaves), 1)
        questions = sum(r["questions"] for r in rows)
        return {
            "precision": rounded(score.precision),
            "recall": rounded(score.recall),
            "leaf_accuracy": rounded(1.0 - (score.false_positives + score.false_negatives) / pairs),
            "votes_per_image": rounded(sum(r["votes"] for r in rows) / n),
            "questions_per_image": rounded(questions / n),
            "flat_questions_per_image": len(self.hierarchy.leaves),
            "worker_seconds_per_image": rounded(stats.worker_seconds / n, 2),
            "images": n,
            "images_done": len(done),
            "images_unfinished": n - len(done),
            "review_per_100_images": rounded(100 * self.finisher.review["decided"] / n, 2),
            "reviewer": self.finisher.summary(),
            "present_true": len(truth),
            "present_found": len(predicted),
            "order": self.order,
            "engine": self.engine if self.engine == "vote" else f"consensus/{self.consensus}",
        }
