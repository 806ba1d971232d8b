"""The `full` scenario: the whole platform end to end through its HTTP API, scored on the exported files.

1. verification: one candidate synset per image (noisy like search results), dynamic consensus;
2. multi-label: Algorithm 1 over a hierarchy (ILSVRC §3.3.3); the platform starts a box job for every class it
   finds present (multilabel -> boxes.services), and the crowd draws and checks boxes (ILSVRC §3.2.1);
3. review: the operator runs the overlap scan, a simulated reviewer leases and decides every review item from
   the ground truth (small error rate); the crowd then finishes whatever review sent back, a few rounds;
4. splits (train/val, frozen) and exports (COCO for boxes, ILSVRC for image-level labels) through the export
   API; the downloaded archives are scored against the ground truth (`simulator.export_score`).

Steps with no API (the overlap scan, making splits) are run by the `operator` the command passes in, as an
operator would from the shell. Nothing here imports the platform.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from simulator.detector import DetectorSpec, detect
from simulator.driver import OrganizerApi, Stats, latest, rounded
from simulator.ground_truth import label_precision_recall
from simulator.scenarios.boxes import DEFAULT_VOTE_CAP, answer_box_task, is_box_task
from simulator.scenarios.finishing import REVIEW_ROUNDS, REVIEWER_ERROR_RATE, Finisher, Operator, decide_item
from simulator.scenarios.full_scoring import FullScoring
from simulator.scenarios.multilabel import HierarchyFile
from simulator.scenes import Scene, SceneClass, SceneSpec, generate_scenes
from simulator.simulated import Crowd, SimulatedWorker, TaskKind, answer_binary, answer_seconds

KINDS = ("question", "box_draw", "box_quality", "box_coverage", "binary_vote")
# What the crowd's answers are about, by phase (a hierarchy question may still be open during review).
PHASE_ANSWERS = {"verification": "verify", "multilabel": "hierarchy", "review": "hierarchy"}
EXPORT_FORMATS = ("coco", "ilsvrc")
EXPORT_WAIT_SECONDS = 300.0
# With --gold-rate: the organizer labels this many extra images (a share of --images) itself; they are posted as
# gold items and never enter production or the scores.
GOLD_IMAGE_SHARE = 0.2
QUESTION_SUBJECT = "question"  # an ambiguous item about a consensus question names a type containing this


class FullScenario(FullScoring):
    name = "full"
    kinds = KINDS

    def __init__(
        self,
        classes: list[SceneClass],
        crowd: Crowd,
        n_images: int,
        seed: int,
        hierarchy_path: Path,
        operator: Operator,
        reviewer_token: str,
        positive_rate: float = 0.6,
        image_size: tuple[int, int] | None = None,
        order: str = "breadth_first",
        scene_overrides: dict[str, Any] | None = None,
        reviewer_error_rate: float = REVIEWER_ERROR_RATE,
        review_rounds: int = REVIEW_ROUNDS,
        background: bool = False,
        majorities: tuple[int, ...] = (),
        gold_rate: float = 0.0,
        gold_image_share: float = GOLD_IMAGE_SHARE,
        log: Callable[[str], None] | None = None,
        detector: DetectorSpec | None = None,
        proposal_threshold: float = 0.5,
        extension_cap: int | None = None,
        **_ignored: Any,
    ) -> None:
        if not 0.0 <= positive_rate <= 1.0:
            raise ValueError("--positive-rate must be between 0 and 1")
        self.classes, self.crowd, self.n_images, self.seed = classes, crowd, n_images, seed
        self.extension_cap = extension_cap  # the dataset's second vote cap; None: the platform's default
        self.operator = operator
        self.positive_rate, self.order = positive_rate, order
        self.background = background
        if any(n < 1 for n in majorities):
            raise ValueError("--majority takes vote counts of at least 1, e.g. 3,5")
        self.majorities = tuple(majorities)
        if not 0.0 <= gold_rate < 1.0:
            raise ValueError("--gold-rate must be in [0, 1)")
        self.gold_rate = gold_rate
        # With a detector, the organizer pushes its proposals on the production images as a prediction set and
        # names it in the box settings: the box jobs multi-label starts begin from them (docs/boxes.md).
        self.detector, self.proposal_threshold = detector, proposal_threshold
        if not 0.0 <= proposal_threshold <= 1.0:
            raise ValueError("--proposal-threshold must be in [0, 1]")
        self.seconds_by_what: dict[str, float] = {}
        n_gold = max(1, round(n_images * gold_image_share)) if gold_rate else 0
        self.majority_figures: dict[str, dict[str, Any]] = {}
        self.log = log or (lambda message: None)
        self.hierarchy = HierarchyFile.read(hierarchy_path)
        keys = [c.key for c in classes]
        unknown = sorted(set(keys) - set(self.hierarchy.leaves))
        if unknown:
            raise ValueError(f"classes that are not leaves of the hierarchy: {unknown[:5]}")
        sizes: dict[str, Any] = {}
        if image_size is not None:
            w, h = image_size
            sizes = {"width_range": (w, w), "height_range": (h, h)}
        spec = SceneSpec(
            n_images=n_images + n_gold,
            seed=seed,
            groups=self.hierarchy.scene_groups(keys),
            **sizes,
            **(scene_overrides or {}),
        )
        scenes = generate_scenes(classes, spec)
        self.scenes: list[Scene] = scenes[:n_images]  # production
        self.gold_scenes: list[Scene] = scenes[n_images:]  # labeled by the organizer: gold, never scored
        self.gold_images: set[int] = set()
        self.gold_answers: dict[str, int] = {}  # simulated worker id -> gold tasks answered
        self.assignment_worker: dict[int, str] = {}  # assignment id -> simulated worker id
        self.image_scene: dict[int, Scene] = {}
        self.image_of_ref: dict[str, int] = {}  # a lease's task.image.ref -> the image id uploading gave
        self.scene_of: dict[int, Scene] = {}  # every image id the crowd may see, side datasets included
        self.files: list[tuple[str, bytes]] = []
        self.image_ids: dict[str, int] = {}
        self.candidates: list[tuple[int, str]] = []  # (image id, class key) to verify
        self.counts: dict[str, int] = {}  # answers by what they were about (verify, hierarchy, box_draw...)
        self.phase = "verification"
        # How long after the later of the last crowd answer and the last reviewer decision (the finisher's) each
        # export was requested and finished: the export must hold what the answers made final, however soon it
        # is asked for.
        self.export_timing: dict[str, dict[str, Any]] = {}
        self.finisher = Finisher(
            operator,
            reviewer_token,
            lambda item: decide_item(item, self.image_scene, self.hierarchy.leaves_under),
            np.random.default_rng([seed, 0x4E71]),
            error_rate=reviewer_error_rate,
            rounds=review_rounds,
            log=self.log,
        )

    # --- setup and phases ----------------------------------------------------------------------------------

    def setup(self, api: OrganizerApi) -> None:
        cap = min(DEFAULT_VOTE_CAP, len(self.crowd.workers) - 2)
        settings: dict[str, int] = {}
        if cap < DEFAULT_VOTE_CAP:  # a small crowd cannot give the engine's default cap of distinct votes
            settings |= {"vote_cap": max(3, cap), "calibration_votes": max(3, min(10, cap))}
        if self.extension_cap is not None:
            settings["extension_cap"] = self.extension_cap
        if settings:
            api.call(
                "PATCH", f"/api/v1/datasets/{api.dataset_id}/consensus-settings/", json_body=settings
            ).expect(200)
        files = [(f"scene-{s.index:05d}.{s.image_format.lower()}", s.image_bytes) for s in self.scenes]
        gold_files = [
            (f"gold-{s.index:05d}.{s.image_format.lower()}", s.image_bytes) for s in self.gold_scenes
        ]
        self.files = files
        ids = api.upload(files + gold_files)
        self.image_ids = {name: ids[name] for name, _ in files}  # file name -> image id
        by_name = {name: scene for (name, _), scene in zip(files, self.scenes, strict=True)}
        by_name |= {name: scene for (name, _), scene in zip(gold_files, self.gold_scenes, strict=True)}
        self.image_scene = {ids[name]: by_name[name] for name, _ in files}
        gold_scene = {ids[name]: by_name[name] for name, _ in gold_files}
        self.gold_images = set(gold_scene)
        self.scene_of.update(self.image_scene)
        self.image_of_ref = api.image_of_ref  # side datasets' uploads add theirs (_majority)
        self.scene_of.update(gold_scene)
        self.candidates = self._choose_candidates()
        if self.gold_rate:
            self._seed_gold(api, gold_scene)
        if self.detector is not None:
            self._push_detections(api)
        by_concept: dict[str, list[int]] = {}
        for image_id, key in self.candidates:
            by_concept.setdefault(key, []).append(image_id)
        for key in sorted(by_concept):
            api.call(
                "POST",
                f"/api/v1/datasets/{api.dataset_id}/verification/",
                json_body={"concept": key, "images": by_concept[key], "calibrate": True},
            ).expect(201)

    def _seed_gold(self, api: OrganizerApi, gold_scene: dict[int, Scene]) -> None:
        """The organizer's own labels on the gold images, posted as gold items: a verification candidate and the
        hierarchy's top-level questions and present leaves (box gold needs boxes drawn first: not seeded), then
        the dataset's gold rate."""
        rng = np.random.default_rng([self.seed, 0x601D])
        keys = [c.key for c in self.classes]
        roots = sorted(
            {r for leaf in keys for r in self.hierarchy.roots_above.get(leaf, ()) if r not in keys}
        )
        for image_id, scene in sorted(gold_scene.items()):
            present = sorted(scene.class_keys)
            absent = [k for k in keys if k not in scene.class_keys]
            if present and (not absent or rng.random() < self.positive_rate):
                items = [("image_verify", present[int(rng.integers(len(present)))])]
            else:
                items = [("image_verify", absent[int(rng.integers(len(absent)))])]
            items += [("hierarchy", node) for node in roots + present]
            for kind, node in items:
                api.call(
                    "POST",
                    f"/api/v1/datasets/{api.dataset_id}/gold/",
                    json_body={
                        "kind": kind,
                        "concept": node,
                        "image": image_id,
                        "answer": bool(
                            self.hierarchy.leaves_under.get(node, frozenset({node})) & scene.class_keys
                        ),
                    },
                ).expect(201)
        api.call(
            "PATCH",
            f"/api/v1/datasets/{api.dataset_id}/gold-settings/",
            json_body={"rate": self.gold_rate, "seed": self.seed},
        ).expect(200)

    def _push_detections(self, api: OrganizerApi) -> None:
        """The simulated detector's proposals on the production images, pushed as a prediction set (COCO results,
        the class by wnid), and chosen in the dataset's box settings with the threshold."""
        assert self.detector is not None
        rows = [
            {
                "image_id": image_id,
                "wnid": p.class_key,
                "bbox": [p.box[0], p.box[1], round(p.box[2] - p.box[0], 2), round(p.box[3] - p.box[1], 2)],
                "score": p.score,
            }
            for image_id, scene in sorted(self.image_scene.items())
            for p in detect(scene, self.detector)
        ]
        if not rows:
            return
        pushed = api.call(
            "POST",
            f"/api/v1/datasets/{api.dataset_id}/prediction-sets/push",
            json_body={
                "name": f"simulated detector, recall {self.detector.recall}",
                "model": {"name": "simulated-detector", "version": f"seed {self.detector.seed}"},
                "detections": rows,
            },
        ).expect(200, 201)
        api.call(
            "PATCH",
            f"/api/v1/datasets/{api.dataset_id}/box-settings",
            json_body={"prediction_set": pushed["id"], "proposal_threshold": self.proposal_threshold},
        ).expect(200)
        self.log(f"detector: {len(rows)} proposals pushed as prediction set {pushed['id']}")

    def _choose_candidates(self) -> list[tuple[int, str]]:
        """One candidate per image: a class it shows with probability `positive_rate`, else one it does not."""
        rng = np.random.default_rng([self.seed, 0x7E5])
        keys = [c.key for c in self.classes]
        chosen = []
        for image_id, scene in sorted(self.image_scene.items()):
            present = sorted(scene.class_keys)
            absent = [k for k in keys if k not in scene.class_keys]
            if present and (not absent or rng.random() < self.positive_rate):
                chosen.append((image_id, present[int(rng.integers(len(present)))]))
            elif absent:
                chosen.append((image_id, absent[int(rng.integers(len(absent)))]))
        return chosen

    def run(self, api: OrganizerApi, work: Callable[[], Stats]) -> None:
        """The phases after setup; `work()` lets the crowd work until no task is left."""
        self.log("verification")
        self.finisher.work_out(api, work)
        self.phase = "multilabel"
        self.log("multi-label and boxes")
        hierarchy = self._hierarchy_id(api)
        api.call(
            "POST",
            f"/api/v1/datasets/{api.dataset_id}/multilabel/",
            json_body={
                "hierarchy": hierarchy,
                "images": sorted(self.image_scene),
                "order": self.order,
                "engine": "consensus",
            },
        ).expect(201)
        self.finisher.work_out(api, work)
        self.phase = "review"
        self.finisher.review_rounds(api, work)
        self.phase = "export"
        started = time.monotonic()
        self.operator.make_splits(api.dataset_name, self.seed)
        self.log(f"splits made and frozen in {time.monotonic() - started:.1f} s")
        self.log("export")
        self.archives = {fmt: self._export(api, fmt) for fmt in EXPORT_FORMATS}
        for n in self.majorities:
            self.phase = f"majority{n}"
            self.log(f"fixed majority of {n}, beside")
            self.majority_figures[self.phase] = self._majority(api, work, n)

    def _majority(self, api: OrganizerApi, work: Callable[..., Stats], n: int) -> dict[str, Any]:
        """The same candidates verified by a fixed majority of `n` votes (plain vote tasks) in a dataset of its
        own, so its labels never mix with the scenario's; the figures the target compares dynamic consensus
        with."""
        side = OrganizerApi(api.transport, api.token)
        side.create_dataset(f"{api.dataset_name}-majority{n}", description="fixed-majority comparison")
        ids = side.upload(self.files)
        self.image_of_ref.update(side.image_of_ref)
        to_side = {self.image_ids[name]: side_id for name, side_id in ids.items()}
        self.scene_of.update({side_id: self.image_scene[main] for main, side_id in to_side.items()})
        by_concept: dict[str, list[int]] = {}
        for image_id, key in self.candidates:
            by_concept.setdefault(key, []).append(to_side[image_id])
        for key in sorted(by_concept):
            side.call(
                "POST",
                f"/api/v1/datasets/{side.dataset_id}/vote-tasks/",
                json_body={"concept": key, "images": by_concept[key], "answers_wanted": n},
            ).expect(201)
        stats = work(side.dataset_id)
        results = side.paged(f"/api/v1/datasets/{side.dataset_id}/vote-results/")
        back = {v: k for k, v in to_side.items()}
        accepted = {
            (back[r["image"]], r["concept"])
            for r in results
            if r["result"] and r["result"].get("answer") is True
        }
        truth = {(i, k) for i, k in self.candidates if k in self.image_scene[i].class_keys}
        score = label_precision_recall(accepted, truth)
        return {
            "precision": rounded(score.precision),
            "recall": rounded(score.recall),
            "votes_per_image": rounded(stats.tasks_answered / len(self.scenes)),
            "worker_seconds_per_image": rounded(stats.worker_seconds / len(self.scenes), 2),
            "undecided": sum(1 for r in results if not r["result"] or r["result"].get("answer") is None),
        }

    def _hierarchy_id(self, api: OrganizerApi) -> int:
        for h in api.paged("/api/v1/hierarchies/"):
            if (h["name"], h["version"]) == (self.hierarchy.name, self.hierarchy.version):
                return h["id"]
        raise RuntimeError(f"hierarchy {self.hierarchy.name!r} {self.hierarchy.version!r} is not loaded")

    def work_pending(self, api: OrganizerApi) -> bool:
        """With a server and Celery workers, questions waiting for a calibration table may still get one."""
        if not self.background:
            return False
        data = api.call(
            "GET", f"/api/v1/datasets/{api.dataset_id}/decisions/", params={"state": "waiting"}
        ).expect(200)
        return bool(data["count"])

    # --- the crowd ---------------------------------------------------------------------------------------

    def answer(self, worker: SimulatedWorker, assignment: dict) -> tuple[dict | None, float]:
        task = assignment["task"]
        image_id = self.image_of_ref[task["image"]["ref"]]
        scene = self.scene_of[image_id]
        if is_box_task(task):
            answer, seconds = answer_box_task(worker, task, scene, image_id)
            what = (
                task["kind"]
                if task["kind"] != "question"
                else ("box_quality" if task["payload"].get("box") else "box_coverage")
            )
        else:
            node = task["payload"]["concept"]["wnid"]
            truth = bool(self.hierarchy.leaves_under.get(node, frozenset({node})) & scene.class_keys)
            difficulty = self.crowd.difficulty(worker, node, sorted(scene.class_keys))
            yes = answer_binary(worker, truth, difficulty, question_key=(image_id, node))
            answer, seconds = {"answer": yes}, answer_seconds(worker, TaskKind.QUESTION)
            what = PHASE_ANSWERS.get(self.phase, self.phase)
        if answer is not None:
            self.counts[what] = self.counts.get(what, 0) + 1
            self.seconds_by_what[what] = self.seconds_by_what.get(what, 0.0) + seconds
            self.assignment_worker[assignment["id"]] = worker.worker_id
            if image_id in self.gold_images:
                self.gold_answers[worker.worker_id] = self.gold_answers.get(worker.worker_id, 0) + 1
        return answer, seconds

    # --- exports -----------------------------------------------------------------------------------------

    def _export(self, api: OrganizerApi, fmt: str) -> bytes:
        last = latest(self.finisher.last_answer_at, self.finisher.last_decision_at)
        requested = time.monotonic()
        job = api.call(
            "POST",
            f"/api/v1/datasets/{api.dataset_id}/exports/",
            json_body={"format": fmt, "split": "all", "include_images": False},
        ).expect(200, 201)
        deadline = time.monotonic() + EXPORT_WAIT_SECONDS
        while job["state"] not in ("done", "failed"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {fmt} export did not finish in {EXPORT_WAIT_SECONDS:.0f} s")
            time.sleep(0.5)
            job = api.call("GET", f"/api/v1/exports/{job['id']}/").expect(200)
        if job["state"] != "done":
            raise RuntimeError(f"the {fmt} export failed: {job}")
        timing = {
            # From the platform's confirmation of the last answer (crowd or reviewer) to sending the request.
            "seconds_after_last_answer": None if last is None else round(requested - last, 2),
            "last_answer": "review decision"
            if last is not None and last == self.finisher.last_decision_at
            else "crowd",
            "seconds_to_done": round(time.monotonic() - requested, 2),
        }
        self.export_timing[fmt] = timing
        self.log(
            f"{fmt} export requested {timing['seconds_after_last_answer']} s after the last answer "
            f"({timing['last_answer']}), done {timing['seconds_to_done']} s later"
        )
        return api.call("GET", f"/api/v1/exports/{job['id']}/file", binary=True).expect(200)
