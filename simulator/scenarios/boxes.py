"""The `boxes` scenario: generated scenes whose (image, class) pairs are known present, boxed by the crowd
through the box pipeline (draw, quality, coverage; ILSVRC §3.2.1), then scored against the true boxes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from simulator.driver import OrganizerApi, Stats, rounded
from simulator.ground_truth import COVERAGE_IOU, box_scores, match_boxes
from simulator.scenarios.finishing import Finisher, Operator, decide_item
from simulator.scenes import Scene, SceneClass, SceneSpec, generate_scenes
from simulator.simulated import (
    Crowd,
    SimulatedWorker,
    TaskKind,
    answer_seconds,
    draw_box,
    extreme_points,
    judge_box_quality,
    judge_coverage,
)

# The draw page's own rules (shown to the worker, enforced while dragging): a simulated drawer obeys them
# as a person at the page would, instead of sending boxes the page would never let through.
MIN_SIDE = 4.0
MIN_DIFFERENCE = 5.0
REDRAW_ATTEMPTS = 3
# A consensus question takes votes from distinct workers, minus the drawers it excludes, until its vote cap: a
# cap above what a small simulated crowd can give leaves an ambiguous question open for good, while a low cap
# sends many to review (a cap of 6 with 12 workers: 11 of 61 jobs). The scenario sets the dataset's cap to the
# crowd size minus 2 (at most the engine's default 12) through the organizer API.
DEFAULT_VOTE_CAP = 12

KIND_TIMING = {"box_draw": TaskKind.DRAW, "box_quality": TaskKind.QUALITY, "box_coverage": TaskKind.COVERAGE}
# The consensus engine (the default backend) serves both questions as its `question` kind: a judged `box` in
# the payload makes it a quality question, its absence a coverage question.
QUESTION_KIND = "question"
KINDS = ("box_draw", "box_quality", "box_coverage", QUESTION_KIND)


def page_rules_hold(box: tuple[float, ...], existing: np.ndarray, min_difference: float) -> bool:
    if box[2] - box[0] < MIN_SIDE or box[3] - box[1] < MIN_SIDE:
        return False
    if existing.shape[0] == 0:
        return True
    diffs = np.abs(existing - np.asarray(box)[None, :]).max(axis=1)
    return bool(np.all(diffs >= min_difference))


def grow_to_min_side(box: tuple[float, ...], width: int, height: int) -> tuple[float, ...]:
    """What the page does with a click-sized box: grow it around its centre to the minimum side."""
    x1, y1, x2, y2 = box
    if x2 - x1 < MIN_SIDE:
        cx = min(max((x1 + x2) / 2, MIN_SIDE / 2), width - MIN_SIDE / 2)
        x1, x2 = cx - MIN_SIDE / 2, cx + MIN_SIDE / 2
    if y2 - y1 < MIN_SIDE:
        cy = min(max((y1 + y2) / 2, MIN_SIDE / 2), height - MIN_SIDE / 2)
        y1, y2 = cy - MIN_SIDE / 2, cy + MIN_SIDE / 2
    return (round(x1, 2), round(y1, 2), round(x2, 2), round(y2, 2))


def _coords(box: dict | list) -> list[float]:
    """The consensus `question` payload names the coordinates; annotation's box kinds list them."""
    return [box["x1"], box["y1"], box["x2"], box["y2"]] if isinstance(box, dict) else list(box)


def is_box_task(task: dict) -> bool:
    """A draw task, or a consensus question about boxes (its payload lists the accepted boxes)."""
    return task["kind"] in KIND_TIMING or "boxes" in task["payload"]


def answer_box_task(
    worker: SimulatedWorker, task: dict, scene: Scene, image_id: int
) -> tuple[dict | None, float]:
    """A worker's answer to a draw, quality or coverage task on `scene`, and the seconds it took; None when
    the draw page keeps refusing what the worker draws (the worker hands the task back)."""
    kind = task["kind"]
    payload = task["payload"]
    truth = scene.boxes_by_class().get(payload["concept"]["wnid"], np.zeros((0, 4)))
    if kind == QUESTION_KIND:
        kind = "box_quality" if payload.get("box") else "box_coverage"
        payload = {**payload, "boxes": [_coords(b) for b in payload.get("boxes", ())]}
        if payload.get("box"):
            payload["box"] = _coords(payload["box"])
    # A dataset that draws by extreme clicking (the task's draw_mode) times and answers its draws as such.
    clicks = kind == "box_draw" and payload.get("draw_mode") == "extreme"
    seconds = answer_seconds(worker, TaskKind.EXTREME_CLICK if clicks else KIND_TIMING[kind])
    if kind == "box_draw":
        shown = np.asarray([b["box"] for b in payload["boxes"]], dtype=np.float64).reshape(-1, 4)
        drawn = _draw(worker, truth, shown, scene, float(payload["min_difference"]))
        if clicks and drawn is not None and "box" in drawn:
            return {"points": extreme_points(tuple(drawn["box"]))}, seconds
        return drawn, seconds
    shown = np.asarray(payload["boxes"], dtype=np.float64).reshape(-1, 4)
    # What the worker sees names the question, so colluders can agree on it.
    key = (image_id, payload["concept"]["wnid"], kind, payload.get("box"), len(shown))
    if kind == "box_quality":
        box = np.asarray(payload["box"], dtype=np.float64).reshape(1, 4)
        return {"answer": judge_box_quality(worker, box, truth, shown, question_key=key)}, seconds
    return {"answer": judge_coverage(worker, truth, shown, question_key=key)}, seconds


def _draw(
    worker: SimulatedWorker, truth: np.ndarray, shown: np.ndarray, scene: Scene, min_difference: float
) -> dict | None:
    matched = match_boxes(truth, shown, COVERAGE_IOU)
    unboxed = np.delete(truth, matched[matched >= 0], axis=0)
    for _ in range(REDRAW_ATTEMPTS):
        box = draw_box(worker, unboxed, shown, (scene.width, scene.height))
        if box is None:
            return {"none_left": True}
        box = grow_to_min_side(box, scene.width, scene.height)
        if page_rules_hold(box, shown, min_difference):
            return {"box": list(box)}
    return None  # the page kept refusing: the worker skips the task and someone else takes it


@dataclass
class BoxesScenario:
    classes: list[SceneClass]
    crowd: Crowd
    n_images: int
    seed: int
    max_boxes: int = 25
    max_rounds: int = 30
    draw_mode: str = "corners"
    name: str = "boxes"
    kinds: tuple[str, ...] = KINDS

    def __init__(
        self,
        classes: list[SceneClass],
        crowd: Crowd,
        n_images: int,
        seed: int,
        max_boxes: int = 25,
        max_rounds: int = 30,
        draw_mode: str = "corners",
        operator: Operator | None = None,
        reviewer_token: str | None = None,
        log: Callable[[str], None] | None = None,
        **_ignored: Any,  # options of other scenarios (--positive-rate, --votes)
    ) -> None:
        self.classes, self.crowd, self.n_images, self.seed = classes, crowd, n_images, seed
        self.max_boxes, self.max_rounds, self.draw_mode = max_boxes, max_rounds, draw_mode
        self.name = "boxes"
        self.kinds = KINDS
        self.scenes: list[Scene] = generate_scenes(classes, SceneSpec(n_images=n_images, seed=seed))
        self.image_scene: dict[int, Scene] = {}
        self.image_of_ref: dict[str, int] = {}  # a lease's task.image.ref -> the image id uploading gave
        # Run as a deployment runs (simulator.scenarios.finishing): the sweep, then an in-house reviewer deciding what
        # the crowd could not. Without an operator the run stops when the crowd runs dry.
        self.finisher = Finisher(
            operator,
            reviewer_token,
            lambda item: decide_item(item, self.image_scene, {}),
            np.random.default_rng([seed, 0x4E71]),
            log=log,
        )

    def run(self, api: OrganizerApi, work: Callable[[], Stats]) -> None:
        """The crowd works until no task is left, the sweep settles what nobody left can answer, and the
        reviewer decides what went to review (the crowd working on whatever that opens)."""
        self.finisher.finish(api, work)

    def setup(self, api: OrganizerApi) -> None:
        cap = max(3, min(DEFAULT_VOTE_CAP, len(self.crowd.workers) - 2))
        api.call(
            "PATCH",
            f"/api/v1/datasets/{api.dataset_id}/consensus-settings/",
            json_body={"vote_cap": cap, "calibration_votes": min(10, cap)},
        ).expect(200)
        if self.draw_mode != "corners":  # before any job is started: their DRAW tasks take the mode
            api.call(
                "PATCH",
                f"/api/v1/datasets/{api.dataset_id}/box-settings/",
                json_body={"draw_mode": self.draw_mode},
            ).expect(200)
        files = [(f"scene-{s.index:05d}.{s.image_format.lower()}", s.image_bytes) for s in self.scenes]
        ids = api.upload(files)
        by_name = {name: scene for (name, _), scene in zip(files, self.scenes, strict=True)}
        self.image_scene = {image_id: by_name[name] for name, image_id in ids.items()}
        self.image_of_ref = api.image_of_ref
        by_concept: dict[str, list[int]] = {}
        for image_id, scene in sorted(self.image_scene.items()):
            for key in sorted(scene.class_keys):
                by_concept.setdefault(key, []).append(image_id)
        for key in sorted(by_concept):
            api.call(
                "POST",
                f"/api/v1/datasets/{api.dataset_id}/box-jobs/",
                json_body={
                    "concept": key,
                    "images": by_concept[key],
                    "max_boxes": self.max_boxes,
                    "max_rounds": self.max_rounds,
                },
            ).expect(201)

    def answer(self, worker: SimulatedWorker, assignment: dict) -> tuple[dict | None, float]:
        task = assignment["task"]
        image_id = self.image_of_ref[task["image"]["ref"]]
        return answer_box_task(worker, task, self.image_scene[image_id], image_id)

    def summarize(self, api: OrganizerApi, stats: Stats) -> dict[str, Any]:
        rows = api.paged(f"/api/v1/datasets/{api.dataset_id}/boxes/", {"state": "accepted"})
        accepted: dict[tuple[int, str], list[list[float]]] = {}
        for r in rows:
            accepted.setdefault((r["image"], r["concept"]), []).append([r["x1"], r["y1"], r["x2"], r["y2"]])
        truth = {
            (image_id, key): boxes
            for image_id, scene in self.image_scene.items()
            for key, boxes in scene.boxes_by_class().items()
        }
        score = box_scores(truth, accepted)
        progress = api.call("GET", f"/api/v1/datasets/{api.dataset_id}/box-jobs/").expect(200)
        n = len(self.scenes)
        votes = sum(stats.by_kind.get(k, 0) for k in ("box_quality", "box_coverage", QUESTION_KIND))
        return {
            "box_coverage": rounded(score.coverage),
            "box_accuracy": rounded(score.accuracy),
            "votes_per_image": rounded(votes / n),
            "tasks_per_image": rounded(stats.tasks_answered / n),
            "worker_seconds_per_image": rounded(stats.worker_seconds / n, 2),
            "worker_seconds_per_box": rounded(stats.worker_seconds / max(score.accepted_boxes, 1), 2),
            "images": n,
            "true_instances": int(sum(len(b) for b in truth.values())),
            "accepted_boxes": score.accepted_boxes,
            "duplicate_boxes": score.duplicate_boxes,
            "covered_images": score.covered_images,
            "jobs": progress["status_counts"],
            "jobs_unfinished": progress["total"] - progress["status_counts"].get("done", 0),
            "review_per_100_images": rounded(100 * self.finisher.review["decided"] / n, 2),
            "reviewer": self.finisher.summary(),
            "review_reasons": progress["review_reasons"],
        }
