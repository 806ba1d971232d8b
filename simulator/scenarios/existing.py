"""The `existing` scenario (`simulate --dataset ID`): the simulated crowd works a dataset that is already on the
platform, its own images and whatever pipelines its organizer started (verification, fixed-majority votes,
Algorithm 1, boxing), instead of a dataset the simulator makes. Nothing is uploaded or started: the run shows
how the organizer's settings and pipelines behave with a crowd of this size before a real crowd is paid.

Nobody knows the truth about real images, so each (image, class) pair gets a made-up one, seeded and stable
across runs: present with `positive_rate`, then with one or two boxes at seeded places. Workers answer from it
with their own noise, as in the other scenarios; the summary reports what the platform did (answers per kind,
questions decided, sent to review or left open, each stage's progress before and after), not precision or
recall, which would only measure the made-up truth.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.driver import OrganizerApi, Stats, rounded
from simulator.scenarios.boxes import KIND_TIMING, answer_box_task, is_box_task
from simulator.simulated import Crowd, SimulatedWorker, TaskKind, answer_binary, answer_seconds

# Every kind a worker page answers with a yes/no or a box: the crowd takes whichever the organizer started.
KINDS = ("question", "binary_vote", "hierarchy_question", *KIND_TIMING)
DECISION_STATES = ("waiting", "open", "accepted", "rejected", "review")


class DatasetUnavailable(RuntimeError):
    """The dataset is unknown, not the organizer's, or archived; the message says which."""


def stable_seed(*parts: object) -> int:
    """A seed from `parts` that is the same in every process (Python's hash() of a str is not)."""
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")


@dataclass(frozen=True)
class MadeUpScene:
    """What `answer_box_task` reads of a scene: its size and the boxes of one class."""

    width: int
    height: int
    boxes: dict[str, np.ndarray]

    def boxes_by_class(self) -> dict[str, np.ndarray]:
        return self.boxes


@dataclass
class ExistingDatasetScenario:
    crowd: Crowd
    seed: int
    dataset_id: int
    positive_rate: float = 0.6
    name: str = "existing"
    kinds: tuple[str, ...] = KINDS
    before: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= self.positive_rate <= 1.0:
            raise ValueError("--positive-rate must be between 0 and 1")

    # --- the organizer ---------------------------------------------------------------------------------------

    def open_dataset(self, api: OrganizerApi) -> None:
        """Point `api` at the dataset, refusing one the token's organizer cannot see (unknown or another
        organizer's: the platform answers both alike) or an archived one (it hands out no task)."""
        reply = api.call("GET", f"/api/v1/datasets/{self.dataset_id}/")
        if reply.status == 404:
            raise DatasetUnavailable(
                f"dataset {self.dataset_id} does not exist or is not one this organizer organizes"
            )
        data = reply.expect(200)
        if data.get("archived_at"):
            raise DatasetUnavailable(
                f"dataset {self.dataset_id} ({data['name']}) is archived: it hands out no task; restore it first"
            )
        api.dataset_id, api.dataset_name = data["id"], data["name"]

    def setup(self, api: OrganizerApi) -> None:
        """Nothing to upload or start: note where the dataset stands before the crowd comes."""
        self.before = self._standing(api)

    # --- the crowd -------------------------------------------------------------------------------------------

    def _present(self, ref: str, wnid: str) -> bool:
        return np.random.default_rng(stable_seed(self.seed, ref, wnid)).random() < self.positive_rate

    def _scene(self, image: dict, wnid: str) -> MadeUpScene:
        width, height = int(image["width"]), int(image["height"])
        boxes = np.zeros((0, 4))
        if self._present(image["ref"], wnid):
            rng = np.random.default_rng(stable_seed(self.seed, image["ref"], wnid, "boxes"))
            rows = []
            for _ in range(int(rng.integers(1, 3))):
                w, h = width * rng.uniform(0.2, 0.5), height * rng.uniform(0.2, 0.5)
                x, y = rng.uniform(0, width - w), rng.uniform(0, height - h)
                rows.append((round(x, 1), round(y, 1), round(x + w, 1), round(y + h, 1)))
            boxes = np.asarray(rows, dtype=np.float64)
        return MadeUpScene(width, height, {wnid: boxes})

    def answer(self, worker: SimulatedWorker, assignment: dict) -> tuple[dict | None, float]:
        task = assignment["task"]
        image, wnid = task["image"], task["payload"]["concept"]["wnid"]
        if is_box_task(task):
            return answer_box_task(worker, task, self._scene(image, wnid), stable_seed(image["ref"]))
        truth = self._present(image["ref"], wnid)
        difficulty = self.crowd.difficulty(worker, wnid, [wnid] if truth else [])
        yes = answer_binary(worker, truth, difficulty, question_key=(image["ref"], wnid))
        return {"answer": yes}, answer_seconds(worker, TaskKind.QUESTION)

    def work_pending(self, api: OrganizerApi) -> bool:
        """Questions waiting for a calibration table that background work is building."""
        data = api.call(
            "GET", f"/api/v1/datasets/{api.dataset_id}/decisions/", params={"state": "waiting"}
        ).expect(200)
        return bool(data["count"])

    # --- the summary -----------------------------------------------------------------------------------------

    def _standing(self, api: OrganizerApi) -> dict[str, Any]:
        progress = api.call("GET", f"/api/v1/datasets/{api.dataset_id}/progress").expect(200)
        questions = {
            state: api.call(
                "GET", f"/api/v1/datasets/{api.dataset_id}/decisions/", params={"state": state}
            ).expect(200)["count"]
            for state in DECISION_STATES
        }
        return {
            "images": progress["images"],
            "stages": {s["key"]: {"done": s["done"], "total": s["total"]} for s in progress["stages"]},
            "questions": questions,
            "review_open": progress["review_open"],
        }

    def summarize(self, api: OrganizerApi, stats: Stats) -> dict[str, Any]:
        after = self._standing(api)
        images = max(after["images"], 1)
        return {
            "dataset": api.dataset_id,
            "dataset_name": api.dataset_name,
            "images": after["images"],
            "votes_per_image": rounded(stats.tasks_answered / images),
            "worker_seconds_per_image": rounded(stats.worker_seconds / images, 2),
            "truth": "made up (seeded): precision and recall are not measured",
            "before": self.before,
            "after": after,
        }
