"""Simulated crowd workers: who they are (accuracy, spamming, sloppy drawing, speed) and how they answer.

A simulated worker sees only what a browser page shows (the question's concept, the image, the boxes drawn
on it); the simulator passes its private ground truth into each answer function explicitly, so nothing here
ever reads the platform's state. Randomness comes from one numpy Generator per worker, so a run is
reproducible whatever the order in which workers are interleaved.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np

from annotation.geometry import iou_matrix
from simulator.ground_truth import COVERAGE_IOU, BoxArray, as_boxes, match_boxes

Box = tuple[float, float, float, float]

# COCO's "small" object: area under 32 x 32 pixels. Small objects are the ones people overlook.
SMALL_OBJECT_AREA = 32 * 32
# Spread of per-worker speed (log scale). Task-level spread is reduced by as much, so the whole crowd's
# answer times keep the published median and mean.
WORKER_SPEED_SIGMA = 0.3
# Quality judgments on boxes whose IoU is near the 0.7 line are harder: |IoU - 0.7| below this band
# doubles the error rate.
BORDERLINE_IOU_BAND = 0.1

_CROWD_STREAM = 0xC20D
_WORKER_STREAM = 0x3017
_COLLUDER_STREAM = 0xC011
_CONFUSABLE_STREAM = 0xC0F5


class WorkerKind(StrEnum):
    HONEST = "honest"
    SLOPPY = "sloppy"  # honest answers, careless boxes: more jitter, loose boxes, re-boxes boxed instances
    LAZY = "lazy"  # fast, overlooks small objects when drawing and when checking coverage
    # Tries, but is poor at everything: accuracy around 0.6 on every question, shaky and loose boxes, and
    # overlooks small objects.
    WEAK = "weak"
    RANDOM_SPAMMER = "random_spammer"  # answers yes/no at random, draws random boxes
    YES_SPAMMER = "yes_spammer"  # always answers yes, draws random boxes
    # One of a small group that answers identically: they share one random stream per question (seeded by the
    # question's key), so they copy each other and outvote an honest worker; their answers are mostly random.
    COLLUDER = "colluder"


SPAMMER_KINDS = frozenset({WorkerKind.RANDOM_SPAMMER, WorkerKind.YES_SPAMMER, WorkerKind.COLLUDER})


class TaskKind(StrEnum):
    VERIFY = "verify"  # does this image contain X?
    QUESTION = "question"  # a hierarchy question (ILSVRC §3.3.3)
    DRAW = "draw"
    EXTREME_CLICK = "extreme_click"  # a draw by extreme clicking (Papadopoulos et al., ICCV 2017)
    QUALITY = "quality"
    COVERAGE = "coverage"


@dataclass(frozen=True)
class Timing:
    """Seconds per task as a lognormal fitted to a published median and mean:
    median = exp(mu), mean = exp(mu + sigma^2 / 2)."""

    median: float
    mean: float

    @property
    def mu(self) -> float:
        return math.log(self.median)

    @property
    def sigma(self) -> float:
        return math.sqrt(2.0 * math.log(self.mean / self.median))


# Su, Deng, Fei-Fei 2012, seconds per box (median / mean). Image verification and hierarchy questions were not
# timed there; they reuse the quality check, the closest single yes/no judgment on one image.
SU_2012_TIMINGS: dict[TaskKind, Timing] = {
    TaskKind.DRAW: Timing(25.5, 50.8),
    TaskKind.QUALITY: Timing(9.0, 21.9),
    TaskKind.COVERAGE: Timing(7.8, 15.3),
    TaskKind.VERIFY: Timing(9.0, 21.9),
    TaskKind.QUESTION: Timing(9.0, 21.9),
}
# Papadopoulos, Uijlings, Keller, Ferrari, ICCV 2017: about 7.2 s per box by extreme clicking (the paper's
# average; its abstract rounds it to 7 s, against about 34.5 s for a box drawn and checked the ILSVRC way). The
# spread is not taken from the paper: the lognormal borrows Su et al.'s drawing spread (a mean about twice the
# median). Accuracy is modelled as dragging's (same jitter, loose and re-drawn boxes): the paper reports boxes
# as good as the original ground truth drawn the traditional way.
EXTREME_CLICK_MEAN_SECONDS = 7.2
_DRAG = SU_2012_TIMINGS[TaskKind.DRAW]
TIMINGS: dict[TaskKind, Timing] = {
    **SU_2012_TIMINGS,
    TaskKind.EXTREME_CLICK: Timing(
        EXTREME_CLICK_MEAN_SECONDS * _DRAG.median / _DRAG.mean, EXTREME_CLICK_MEAN_SECONDS
    ),
}


@dataclass(frozen=True)
class WorkerProfile:
    """What kind of worker this is. `accuracy` is P(correct) on a yes/no question of difficulty 1; difficulty
    multiplies the error rate (capped at 0.5: a worker who tries is never worse than a coin)."""

    worker_id: str
    kind: WorkerKind
    accuracy: float
    class_difficulty: Mapping[str, float] = field(default_factory=dict)
    jitter_px: float = 2.0
    loose_box_rate: float = 0.05
    rebox_rate: float = 0.0
    small_miss_rate: float = 0.1
    speed: float = 1.0  # multiplier on answer times; below 1 is faster
    yes_rate: float = 0.5  # P(yes) of a random spammer
    group_seed: int = 0  # colluders with the same group seed give the same answer to the same question
    give_up_rate: float = 0.0  # a spammer asked to draw says "nothing left to box" this often (else junk)

    @property
    def is_spammer(self) -> bool:
        return self.kind in SPAMMER_KINDS


class SimulatedWorker:
    """A profile plus the worker's own random stream."""

    def __init__(self, profile: WorkerProfile, seed: int | Sequence[int]) -> None:
        self.profile = profile
        self.rng = np.random.default_rng(seed)

    @property
    def worker_id(self) -> str:
        return self.profile.worker_id

    def __repr__(self) -> str:
        return f"SimulatedWorker({self.profile.worker_id!r}, {self.profile.kind.value}, {self.profile.accuracy:.3f})"


# --- answers -----------------------------------------------------------------------------------------------


def error_rate(profile: WorkerProfile, difficulty: float = 1.0) -> float:
    return min(0.5, max(0.0, (1.0 - profile.accuracy) * difficulty))


def question_stream(group_seed: int, question_key: object) -> np.random.Generator:
    """The random stream a colluding group shares on one question: seeded by a stable hash of the key (not
    Python's salted hash), so every member and every run draws the same numbers."""
    return np.random.default_rng([group_seed, _COLLUDER_STREAM, zlib.crc32(repr(question_key).encode())])


def answer_binary(
    worker: SimulatedWorker, truth: bool, difficulty: float = 1.0, question_key: object = None
) -> bool:
    """A yes/no answer to a question whose true answer the simulator knows. `question_key` names the question
    (e.g. (image id, concept)); colluders need it to agree with each other, without it they answer alone."""
    p = worker.profile
    if p.kind is WorkerKind.YES_SPAMMER:
        return True
    if p.kind is WorkerKind.RANDOM_SPAMMER:
        return bool(worker.rng.random() < p.yes_rate)
    if p.kind is WorkerKind.COLLUDER:
        # The whole group reads the same two draws, so its answers are identical: the truth with probability
        # 2 * accuracy - 1, else a coin, so P(correct) is the profile's accuracy (0.5 by default: pure chance).
        rng = worker.rng if question_key is None else question_stream(p.group_seed, question_key)
        right, yes = rng.random() < 2.0 * p.accuracy - 1.0, bool(rng.random() < p.yes_rate)
        return truth if right else yes
    wrong = worker.rng.random() < error_rate(p, difficulty)
    return (not truth) if wrong else truth


def draw_box(
    worker: SimulatedWorker,
    true_boxes_not_yet_boxed: BoxArray,
    existing_boxes: BoxArray,
    image_size: tuple[int, int],
) -> Box | None:
    """One box around one instance not yet boxed (Su et al. 2012's drawing task), or None when the worker
    sees nothing left to box. `image_size` is (width, height); the box is clipped inside the image."""
    p, rng = worker.profile, worker.rng
    width, height = image_size
    targets = as_boxes(true_boxes_not_yet_boxed)
    existing = as_boxes(existing_boxes)
    if p.is_spammer:
        # Junk: a random box anywhere, or "nothing left" to be done with the task sooner.
        if rng.random() < p.give_up_rate:
            return None
        return _random_box(rng, width, height)
    if existing.shape[0] and rng.random() < p.rebox_rate:
        # Re-drawing an instance that is already boxed: a hand-drawn copy, never pixel-identical.
        base = existing[int(rng.integers(existing.shape[0]))]
        return _clip(base + rng.normal(0.0, max(p.jitter_px, 3.0), size=4), width, height)
    seen = [t for t in targets if not (_is_small(t) and rng.random() < p.small_miss_rate)]
    if not seen:
        return None
    # People box the most salient instance first: pick with weight growing with size.
    weights = np.sqrt(np.array([_area(t) for t in seen]))
    target = seen[int(rng.choice(len(seen), p=weights / weights.sum()))]
    if rng.random() < p.loose_box_rate:
        return _clip(_loosen(rng, target), width, height)
    return _clip(_jitter(rng, target, p.jitter_px), width, height)


def extreme_points(box: Box) -> dict[str, list[float]]:
    """The four points a worker clicks for `box` by extreme clicking: on its top, bottom, left and right sides,
    so the box is exactly their bounds. Where along a side the object touches it comes from the box itself (a
    stream of its own), so a run that clicks draws the very boxes a run that drags does."""
    x1, y1, x2, y2 = box
    along = np.random.default_rng(zlib.crc32(repr(tuple(box)).encode())).uniform(0.2, 0.8, size=4)
    across = (x1 + along[0] * (x2 - x1), x1 + along[1] * (x2 - x1))
    down = (y1 + along[2] * (y2 - y1), y1 + along[3] * (y2 - y1))
    return {"top": [across[0], y1], "bottom": [across[1], y2], "left": [x1, down[0]], "right": [x2, down[1]]}


def box_is_good(
    box: BoxArray, true_boxes: BoxArray, accepted_boxes: BoxArray = (), iou_threshold: float = 0.7
) -> bool:
    """The true answer to the quality question: tight (IoU >= 0.7) around one instance that no accepted box
    already covers."""
    truth = as_boxes(true_boxes)
    if truth.shape[0] == 0:
        return False
    iou = iou_matrix(as_boxes(box), truth)[0]
    best = int(np.argmax(iou))
    if iou[best] < iou_threshold:
        return False
    accepted = as_boxes(accepted_boxes)
    if accepted.shape[0] == 0:
        return True
    return best not in set(match_boxes(truth, accepted, COVERAGE_IOU).tolist())


def judge_box_quality(
    worker: SimulatedWorker,
    box: BoxArray,
    true_boxes: BoxArray,
    accepted_boxes: BoxArray = (),
    difficulty: float = 1.0,
    question_key: object = None,
) -> bool:
    """The worker's answer to "is this box tight around one whole visible instance not boxed already?".
    `question_key` names the question, so colluders agree on it (see `answer_binary`)."""
    truth = box_is_good(box, true_boxes, accepted_boxes)
    t = as_boxes(true_boxes)
    if t.shape[0]:
        best_iou = float(iou_matrix(as_boxes(box), t).max())
        if abs(best_iou - 0.7) < BORDERLINE_IOU_BAND:
            difficulty *= 2.0
    return answer_binary(worker, truth, difficulty, question_key)


def judge_coverage(
    worker: SimulatedWorker,
    true_boxes: BoxArray,
    accepted_boxes: BoxArray,
    difficulty: float = 1.0,
    question_key: object = None,
) -> bool:
    """The worker's answer to "is every instance boxed?". An unboxed instance that is small may be
    overlooked (small_miss_rate) before the ordinary error rate applies."""
    p, rng = worker.profile, worker.rng
    truth_boxes = as_boxes(true_boxes)
    matched = match_boxes(truth_boxes, accepted_boxes, COVERAGE_IOU)
    missing = np.setdiff1d(np.arange(truth_boxes.shape[0]), matched[matched >= 0])
    truth = missing.size == 0
    if not truth and not p.is_spammer and all(_is_small(truth_boxes[i]) for i in missing):
        if rng.random() < p.small_miss_rate:
            return True
    return answer_binary(worker, truth, difficulty, question_key)


def answer_seconds(worker: SimulatedWorker, task: TaskKind | str) -> float:
    """Seconds the worker spends on one task, from the lognormal for that task kind (Su et al. 2012; extreme
    clicking: Papadopoulos et al. 2017)."""
    timing = TIMINGS[TaskKind(task)]
    sigma = math.sqrt(max(timing.sigma**2 - WORKER_SPEED_SIGMA**2, 1e-4))
    return float(worker.rng.lognormal(timing.mu + math.log(worker.profile.speed), sigma))


def _area(b: np.ndarray) -> float:
    return float(max(b[2] - b[0], 0.0) * max(b[3] - b[1], 0.0))


def _is_small(b: np.ndarray) -> bool:
    return _area(b) < SMALL_OBJECT_AREA


def _jitter(rng: np.random.Generator, b: np.ndarray, jitter_px: float) -> np.ndarray:
    # People zoom in on small objects, so the error never exceeds 5% of the object's shorter side.
    std = min(jitter_px, 0.05 * min(b[2] - b[0], b[3] - b[1]))
    return b + rng.normal(0.0, max(std, 0.0), size=4)


def _loosen(rng: np.random.Generator, b: np.ndarray) -> np.ndarray:
    """A clearly loose box: every side pushed out by 12-35% of the object's size (IoU about 0.35-0.6)."""
    w, h = b[2] - b[0], b[3] - b[1]
    grow = rng.uniform(0.12, 0.35, size=4) * np.array([w, h, w, h])
    return b + np.array([-1.0, -1.0, 1.0, 1.0]) * grow


def _random_box(rng: np.random.Generator, width: int, height: int) -> Box:
    w = rng.uniform(10, max(11.0, width * 0.6))
    h = rng.uniform(10, max(11.0, height * 0.6))
    x1 = rng.uniform(0, max(width - w, 0.0))
    y1 = rng.uniform(0, max(height - h, 0.0))
    return _clip(np.array([x1, y1, x1 + w, y1 + h]), width, height)


def _clip(b: np.ndarray, width: int, height: int) -> Box:
    x1 = float(np.clip(min(b[0], b[2]), 0, width - 1))
    y1 = float(np.clip(min(b[1], b[3]), 0, height - 1))
    x2 = float(np.clip(max(b[0], b[2]), x1 + 1, width))
    y2 = float(np.clip(max(b[1], b[3]), y1 + 1, height))
    return (round(x1, 2), round(y1, 2), round(x2, 2), round(y2, 2))


# --- the crowd ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CrowdSpec:
    """A crowd's make-up. Honest accuracy follows Beta(mean * c, (1 - mean) * c), with a share of weak
    workers drawn uniformly from `low_quality_range`. Kind counts are exact (rounded), not sampled, so a
    requested spammer fraction is what the crowd has."""

    n_workers: int = 30
    seed: int = 0
    spammer_fraction: float = 0.1
    yes_spammer_share: float = 0.5
    colluder_fraction: float = 0.0  # one colluding group of this share of the crowd (0: none)
    sloppy_fraction: float = 0.1
    lazy_fraction: float = 0.05
    accuracy_mean: float = 0.88
    accuracy_concentration: float = 25.0
    low_quality_fraction: float = 0.1
    low_quality_range: tuple[float, float] = (0.6, 0.75)
    weak_fraction: float = 0.0  # workers of kind WEAK (weak everywhere, not only on yes/no questions)
    weak_accuracy: float = 0.6
    weak_accuracy_spread: float = 0.04
    weak_jitter_px: float = 4.0
    weak_loose_box_rate: float = 0.25
    weak_small_miss_rate: float = 0.4
    spammer_give_up_rate: float = 0.0  # random spammers only; yes-spammers always draw a junk box
    accuracy_bounds: tuple[float, float] = (0.55, 0.995)
    jitter_px: float = 2.0
    loose_box_rate: float = 0.05
    small_miss_rate: float = 0.1
    sloppy_jitter_px: float = 5.0
    sloppy_loose_box_rate: float = 0.15
    sloppy_rebox_rate: float = 0.3
    lazy_small_miss_rate: float = 0.5
    lazy_speed: float = 0.6
    spammer_speed: float = 0.25
    class_difficulty_sigma: float = 0.4
    worker_class_sigma: float = 0.2
    confusion_factor: float = 3.0

    def __post_init__(self) -> None:
        if self.n_workers < 1:
            raise ValueError("a crowd needs at least one worker")
        if not 0.0 <= self.colluder_fraction <= 1.0:
            raise ValueError("colluder_fraction must be between 0 and 1")
        if self.special_fraction > 1:
            raise ValueError("spammer, colluder, weak, sloppy and lazy fractions add up to more than 1")

    @property
    def special_fraction(self) -> float:
        return (
            self.spammer_fraction
            + self.colluder_fraction
            + self.weak_fraction
            + self.sloppy_fraction
            + self.lazy_fraction
        )


class Crowd:
    """Workers drawn from a CrowdSpec, the crowd-wide difficulty of each class, and confusable class pairs
    (ILSVRC §3.1.3: "Burmese cat" needs more votes than "cat")."""

    def __init__(
        self,
        workers: list[SimulatedWorker],
        class_difficulty: Mapping[str, float],
        confusable: Mapping[str, frozenset[str]],
        confusion_factor: float,
    ) -> None:
        self.workers = workers
        self.class_difficulty = dict(class_difficulty)
        self.confusable = dict(confusable)
        self.confusion_factor = confusion_factor
        self._by_id = {w.worker_id: w for w in workers}

    @classmethod
    def build(
        cls,
        spec: CrowdSpec,
        class_keys: Sequence[str] = (),
        confusable_pairs: Sequence[tuple[str, str]] = (),
    ) -> Crowd:
        rng = np.random.default_rng([spec.seed, _CROWD_STREAM])
        n = spec.n_workers
        n_spam = round(n * spec.spammer_fraction)
        n_yes = round(n_spam * spec.yes_spammer_share)
        n_sloppy = round(n * spec.sloppy_fraction)
        n_lazy = round(n * spec.lazy_fraction)
        n_coll = round(n * spec.colluder_fraction)
        n_weak = round(n * spec.weak_fraction)
        kinds = (
            [WorkerKind.YES_SPAMMER] * n_yes
            + [WorkerKind.RANDOM_SPAMMER] * (n_spam - n_yes)
            + [WorkerKind.COLLUDER] * n_coll
            + [WorkerKind.WEAK] * n_weak
            + [WorkerKind.SLOPPY] * n_sloppy
            + [WorkerKind.LAZY] * n_lazy
        )
        kinds += [WorkerKind.HONEST] * (n - len(kinds))
        kinds = [kinds[i] for i in rng.permutation(n)]

        class_difficulty = {
            k: float(np.clip(rng.lognormal(0.0, spec.class_difficulty_sigma), 0.25, 4.0)) for k in class_keys
        }
        confusable: dict[str, set[str]] = {}
        for a, b in confusable_pairs:
            confusable.setdefault(a, set()).add(b)
            confusable.setdefault(b, set()).add(a)

        lo, hi = spec.accuracy_bounds
        a_par = spec.accuracy_mean * spec.accuracy_concentration
        b_par = (1.0 - spec.accuracy_mean) * spec.accuracy_concentration
        workers = []
        for i, kind in enumerate(kinds):
            if rng.random() < spec.low_quality_fraction:
                acc = rng.uniform(*spec.low_quality_range)
            else:
                acc = rng.beta(a_par, b_par)
            acc = float(np.clip(acc, lo, hi))
            if kind is WorkerKind.WEAK:
                acc = float(np.clip(rng.normal(spec.weak_accuracy, spec.weak_accuracy_spread), 0.51, 0.75))
            speed = float(rng.lognormal(0.0, WORKER_SPEED_SIGMA))
            own = {
                k: d * float(rng.lognormal(0.0, spec.worker_class_sigma)) for k, d in class_difficulty.items()
            }
            profile = WorkerProfile(
                worker_id=f"sim-{spec.seed}-{i:04d}",
                kind=kind,
                accuracy=acc if kind not in SPAMMER_KINDS else 0.5,
                class_difficulty=own,
                jitter_px=spec.jitter_px,
                loose_box_rate=spec.loose_box_rate,
                small_miss_rate=spec.small_miss_rate,
                speed=speed,
                group_seed=spec.seed,
            )
            profile = _specialise(profile, spec)
            workers.append(SimulatedWorker(profile, [spec.seed, _WORKER_STREAM, i]))
        return cls(
            workers,
            class_difficulty,
            {k: frozenset(v) for k, v in confusable.items()},
            spec.confusion_factor,
        )

    def __iter__(self) -> Iterator[SimulatedWorker]:
        return iter(self.workers)

    def __len__(self) -> int:
        return len(self.workers)

    def worker(self, worker_id: str) -> SimulatedWorker:
        return self._by_id[worker_id]

    def difficulty(
        self, worker: SimulatedWorker, concept_key: str, present_keys: Sequence[str] = ()
    ) -> float:
        """Difficulty of "is there a `concept_key`?" for this worker on an image whose true classes are
        `present_keys`: the worker's class multiplier, times `confusion_factor` when the concept is absent but
        a class confusable with it is present (the likely false positive)."""
        d = worker.profile.class_difficulty.get(concept_key, 1.0)
        if concept_key not in present_keys and self.confusable.get(concept_key, frozenset()) & set(
            present_keys
        ):
            d *= self.confusion_factor
        return d


def _specialise(p: WorkerProfile, spec: CrowdSpec) -> WorkerProfile:
    if p.kind is WorkerKind.SLOPPY:
        return replace(
            p,
            jitter_px=spec.sloppy_jitter_px,
            loose_box_rate=spec.sloppy_loose_box_rate,
            rebox_rate=spec.sloppy_rebox_rate,
        )
    if p.kind is WorkerKind.LAZY:
        return replace(p, small_miss_rate=spec.lazy_small_miss_rate, speed=p.speed * spec.lazy_speed)
    if p.kind is WorkerKind.WEAK:
        return replace(
            p,
            jitter_px=spec.weak_jitter_px,
            loose_box_rate=spec.weak_loose_box_rate,
            small_miss_rate=spec.weak_small_miss_rate,
        )
    if p.kind in SPAMMER_KINDS:
        give_up = spec.spammer_give_up_rate if p.kind is WorkerKind.RANDOM_SPAMMER else 0.0
        return replace(
            p, speed=p.speed * spec.spammer_speed, jitter_px=0.0, loose_box_rate=0.0, give_up_rate=give_up
        )
    return p


# --- named crowds (`simulate --crowd`) ---------------------------------------------------------------------

# The crowd of issue 13, written to hurt: 15% random spammers and 5% always-yes spammers (who also draw junk
# boxes and answer box checks at random or always yes), 10% weak workers around 0.6 accuracy in every task,
# 2% colluders, sloppy drawers (loose, shaky boxes, re-boxing) and lazy drawers (miss small objects), and
# confusable classes three times harder to reject.
HOSTILE = dict(
    spammer_fraction=0.20,
    yes_spammer_share=0.25,
    colluder_fraction=0.02,
    weak_fraction=0.10,
    sloppy_fraction=0.10,
    lazy_fraction=0.10,
    low_quality_fraction=0.0,
    sloppy_jitter_px=6.0,
    sloppy_loose_box_rate=0.3,
    sloppy_rebox_rate=0.3,
    lazy_small_miss_rate=0.7,
    spammer_give_up_rate=0.3,
    confusion_factor=3.0,
)
# Honest workers only: no spammers, colluders or weak workers; a few sloppy and lazy drawers, as any real crowd.
CLEAN = dict(
    spammer_fraction=0.0,
    colluder_fraction=0.0,
    weak_fraction=0.0,
    sloppy_fraction=0.05,
    lazy_fraction=0.05,
    low_quality_fraction=0.0,
)
CROWD_PRESETS: dict[str, dict[str, float]] = {"default": {}, "hostile": HOSTILE, "clean": CLEAN}


def crowd_spec(
    preset: str,
    *,
    n_workers: int,
    seed: int,
    spammers: float | None = None,
    colluders: float | None = None,
) -> CrowdSpec:
    """The CrowdSpec of a named crowd; `spammers` and `colluders`, when given, override the preset's shares
    (a spammer share keeps the preset's split between random and always-yes spammers)."""
    if preset not in CROWD_PRESETS:
        raise ValueError(f"unknown crowd {preset!r}; known: {', '.join(CROWD_PRESETS)}")
    fields: dict = {"n_workers": n_workers, "seed": seed, **CROWD_PRESETS[preset]}
    if spammers is not None:
        fields["spammer_fraction"] = spammers
    if colluders is not None:
        fields["colluder_fraction"] = colluders
    return CrowdSpec(**fields)


def confusable_pairs(groups: Sequence[Sequence[str]], seed: int, share: float = 0.5) -> list[tuple[str, str]]:
    """Confusable class pairs: within each group of related classes (siblings in a hierarchy, or a scene
    group), a seeded `share` of the classes is paired with a neighbour, as "Burmese cat" with "Siamese cat"."""
    rng = np.random.default_rng([seed, _CONFUSABLE_STREAM])
    pairs: list[tuple[str, str]] = []
    for group in groups:
        keys = sorted(set(group))
        if len(keys) < 2:
            continue
        order = [keys[i] for i in rng.permutation(len(keys))]
        n_pairs = max(1, round(len(keys) * share / 2))
        for i in range(0, min(2 * n_pairs, len(order) - 1), 2):
            a, b = sorted((order[i], order[i + 1]))
            pairs.append((a, b))
    return pairs
