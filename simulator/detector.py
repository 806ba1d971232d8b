"""A simulated object detector for the simulator's scenes: box proposals with a tunable recall at IoU 0.7,
background false positives per image, mislocalised boxes, localisation noise and score calibration. Pure and
seeded: the same spec and scene always give the same proposals, whatever order scenes are asked in."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from annotation.geometry import iou_matrix
from simulator.scenes import Scene

# A hit overlaps its instance at IoU >= 0.7 (the accuracy bar of ILSVRC §3.2.1, the quality question's bar); a
# mislocalised proposal overlaps it at 0.3 <= IoU < 0.7; a background one overlaps no instance at IoU 0.3 or more.
HIT_IOU = 0.7
BACKGROUND_IOU = 0.3
_STREAM = 0xDE7E
_TRIES = 50


class ProposalKind(StrEnum):
    HIT = "hit"
    MISLOCALISED = "mislocalised"
    BACKGROUND = "background"


@dataclass(frozen=True)
class DetectorSpec:
    """How good the detector is.

    - `recall`: the share of true instances that get a proposal at IoU >= 0.7 (each instance independently).
    - `false_positives_per_image`: the mean number (Poisson) of background proposals per image, each of a class
      the image shows (a class it does not show has no box job, so its proposals would never be asked).
    - `mislocalised_rate`: the share of the instances it misses that still get a proposal, placed badly
      (0.3 <= IoU < 0.7): the crowd must reject these too.
    - `localisation_noise`: the standard deviation of each side of a hit, as a fraction of the object's width
      or height (a hit is redrawn until it keeps IoU >= 0.7).
    - `score_separation`: calibration. Scores are sigmoid(z) with z ~ N(+s/2, 1) for hits and N(-s/2, 1)
      for the rest: 0 makes scores say nothing, 3 separates them well (median 0.82 against 0.18).
    """

    recall: float = 0.6
    false_positives_per_image: float = 0.5
    mislocalised_rate: float = 0.5
    localisation_noise: float = 0.04
    score_separation: float = 3.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("recall", "mislocalised_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1]")
        if self.false_positives_per_image < 0 or self.localisation_noise < 0 or self.score_separation < 0:
            raise ValueError(
                "false_positives_per_image, localisation_noise and score_separation must be >= 0"
            )


@dataclass(frozen=True)
class Proposal:
    """One proposed box of a scene (corners in image pixels) with its score; `kind` is the simulator's truth,
    never shown to the platform."""

    image_index: int
    class_key: str
    box: tuple[float, float, float, float]
    score: float
    kind: ProposalKind


def _score(rng: np.random.Generator, hit: bool, separation: float) -> float:
    z = rng.normal(separation / 2 if hit else -separation / 2, 1.0)
    return round(1.0 / (1.0 + math.exp(-z)), 4)


def _clip(b: np.ndarray, width: int, height: int) -> np.ndarray:
    x1, x2 = np.clip(sorted((b[0], b[2])), 0.0, float(width))
    y1, y2 = np.clip(sorted((b[1], b[3])), 0.0, float(height))
    return np.array([x1, y1, max(x2, x1 + 1.0), max(y2, y1 + 1.0)]).clip(
        0.0, [width - 1, height - 1, width, height]
    )


def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    return iou_matrix(box.reshape(1, 4), others.reshape(-1, 4))[0]


def _hit(rng, truth: np.ndarray, noise: float, width: int, height: int) -> np.ndarray:
    w, h = truth[2] - truth[0], truth[3] - truth[1]
    for _ in range(_TRIES):
        box = _clip(truth + rng.normal(0.0, noise, size=4) * np.array([w, h, w, h]), width, height)
        if _iou(box, truth)[0] >= HIT_IOU:
            return box
    return truth.copy()


def _mislocalised(rng, truth: np.ndarray, width: int, height: int) -> np.ndarray | None:
    w, h = truth[2] - truth[0], truth[3] - truth[1]
    for _ in range(_TRIES):
        shift = rng.uniform(0.1, 0.45, size=2) * rng.choice([-1.0, 1.0], size=2) * np.array([w, h])
        scale = rng.uniform(0.85, 1.35, size=2) * np.array([w, h])
        cx, cy = (truth[0] + truth[2]) / 2 + shift[0], (truth[1] + truth[3]) / 2 + shift[1]
        box = _clip(
            np.array([cx - scale[0] / 2, cy - scale[1] / 2, cx + scale[0] / 2, cy + scale[1] / 2]),
            width,
            height,
        )
        if BACKGROUND_IOU <= _iou(box, truth)[0] < HIT_IOU:
            return box
    return None


def _background(rng, truths: np.ndarray, width: int, height: int) -> np.ndarray | None:
    for _ in range(_TRIES):
        w = rng.uniform(16, max(17.0, width * 0.5))
        h = rng.uniform(16, max(17.0, height * 0.5))
        x1, y1 = rng.uniform(0, max(width - w, 1.0)), rng.uniform(0, max(height - h, 1.0))
        box = _clip(np.array([x1, y1, x1 + w, y1 + h]), width, height)
        if len(truths) == 0 or _iou(box, truths).max() < BACKGROUND_IOU:
            return box
    return None


def detect(scene: Scene, spec: DetectorSpec) -> list[Proposal]:
    """The detector's proposals for one scene, highest score first."""
    rng = np.random.default_rng([spec.seed, _STREAM, scene.index])
    width, height = scene.width, scene.height
    by_class = scene.boxes_by_class()
    found: list[Proposal] = []

    def add(key: str, box: np.ndarray, kind: ProposalKind) -> None:
        corners = tuple(round(float(v), 2) for v in box)
        score = _score(rng, kind == ProposalKind.HIT, spec.score_separation)
        found.append(Proposal(scene.index, key, corners, score, kind))  # type: ignore[arg-type]

    for key in sorted(by_class):
        for truth in by_class[key]:
            if rng.random() < spec.recall:
                add(key, _hit(rng, truth, spec.localisation_noise, width, height), ProposalKind.HIT)
            elif rng.random() < spec.mislocalised_rate:
                box = _mislocalised(rng, truth, width, height)
                if box is not None:
                    add(key, box, ProposalKind.MISLOCALISED)
    keys = sorted(by_class)
    for _ in range(int(rng.poisson(spec.false_positives_per_image)) if keys else 0):
        key = keys[int(rng.integers(len(keys)))]
        box = _background(rng, by_class[key], width, height)
        if box is not None:
            add(key, box, ProposalKind.BACKGROUND)
    return sorted(found, key=lambda p: -p.score)


def detect_all(scenes: Iterable[Scene], spec: DetectorSpec) -> dict[tuple[int, str], list[Proposal]]:
    """Proposals per (scene index, class key), highest score first (the box pipeline's unit of work)."""
    out: dict[tuple[int, str], list[Proposal]] = {}
    for scene in scenes:
        for p in detect(scene, spec):
            out.setdefault((scene.index, p.class_key), []).append(p)
    return out


def recall_at(
    truth: Mapping[tuple[int, str], np.ndarray],
    proposals: Mapping[tuple[int, str], Sequence[Proposal]],
    iou: float = HIT_IOU,
) -> float:
    """The share of true instances overlapped by some proposal of their class at IoU >= `iou`."""
    hit = total = 0
    for key, boxes in truth.items():
        boxes = np.asarray(boxes, dtype=float).reshape(-1, 4)
        total += len(boxes)
        mine = np.array([p.box for p in proposals.get(key, ())], dtype=float).reshape(-1, 4)
        if len(mine):
            hit += int((iou_matrix(boxes, mine).max(axis=1) >= iou).sum())
    return hit / total if total else float("nan")


def coco_results(
    proposals: Iterable[Proposal], image_ids: Mapping[int, int], category_ids: Mapping[str, int]
) -> list[dict]:
    """The proposals as a COCO results list (`bbox` = [x, y, width, height]), the file docs/predictions.md
    imports; `image_ids` maps scene index to the platform's image id, `category_ids` class key to concept id."""
    return [
        {
            "image_id": image_ids[p.image_index],
            "category_id": category_ids[p.class_key],
            "bbox": [p.box[0], p.box[1], round(p.box[2] - p.box[0], 2), round(p.box[3] - p.box[1], 2)],
            "score": p.score,
        }
        for p in proposals
    ]
