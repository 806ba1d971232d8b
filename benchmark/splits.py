"""Train/val/test split assignment: seeded, stratified by class, stable across dataset versions, and keeping
near-duplicate groups whole. Pure: takes image records and the previous frozen assignment, returns a new one.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

SPLITS = ("train", "val", "test")
EVAL_SPLITS = frozenset({"val", "test"})
ImageKey = int | str


@dataclass(frozen=True)
class SplitRatios:
    train: float
    val: float
    test: float

    def __post_init__(self) -> None:
        values = (self.train, self.val, self.test)
        if min(values) < 0 or abs(sum(values) - 1.0) > 1e-9:
            raise ValueError(f"split ratios must be non-negative and sum to 1, got {values}")

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.train, self.val, self.test)


@dataclass(frozen=True)
class ImageRecord:
    """One image: its id, the classes it is labelled with, its near-duplicate group and where it came from."""

    image_id: ImageKey
    classes: frozenset[int] = frozenset()
    group: ImageKey | None = None  # images sharing a group are near-duplicates
    source: str = ""


@dataclass(frozen=True)
class SplitManifest:
    seed: int
    ratios: tuple[float, float, float]
    source_ratios: dict[str, tuple[float, float, float]]
    counts: dict[str, int]  # images per split
    class_counts: dict[int, dict[str, int]]  # class -> split -> images labelled with it
    n_groups: int
    moved_to_eval: tuple[ImageKey, ...]  # old train images pulled into val/test to join their near-duplicates
    version_hash: str

    def as_dict(self) -> dict[str, object]:
        return {
            "seed": self.seed,
            "ratios": dict(zip(SPLITS, self.ratios, strict=True)),
            "source_ratios": {s: dict(zip(SPLITS, r, strict=True)) for s, r in self.source_ratios.items()},
            "counts": self.counts,
            "class_counts": {str(c): v for c, v in self.class_counts.items()},
            "n_groups": self.n_groups,
            "moved_to_eval": list(self.moved_to_eval),
            "version_hash": self.version_hash,
        }


@dataclass(frozen=True)
class SplitAssignment:
    assignment: dict[ImageKey, str]
    manifest: SplitManifest
    new_images: frozenset[ImageKey] = field(default_factory=frozenset)


def _unit_key(record: ImageRecord) -> str:
    return f"g:{record.group}" if record.group is not None else f"i:{record.image_id}"


def _keyed_rank(seed: int, key: str) -> str:
    # Keyed hash: a unit's place in its stratum depends on the seed and its own key only, so adding images
    # never reshuffles the order of the others.
    return hashlib.sha256(f"{seed}\x00{key}".encode()).hexdigest()


def version_hash(assignment: Mapping[ImageKey, str], seed: int, ratios: Iterable[float]) -> str:
    payload = json.dumps(
        {
            "seed": seed,
            "ratios": list(ratios),
            "assignment": sorted((str(k), v) for k, v in assignment.items()),
        },
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def make_splits(
    images: Sequence[ImageRecord],
    ratios: SplitRatios,
    seed: int = 0,
    previous: Mapping[ImageKey, str] | None = None,
    source_ratios: Mapping[str, SplitRatios] | None = None,
) -> SplitAssignment:
    """Assign every image to train, val or test.

    - Frozen: an image in ``previous`` keeps its split; only new images are placed, filling each stratum
      toward its ratios given what it already holds.
    - Near-duplicates: a group goes to one split. A new image joins its group's existing split; a group whose
      old members were split between train and one evaluation split moves those train images there (listed
      in the manifest); old members in both val and test cannot be reconciled and raise ``ValueError``.
    - Stratified: strata are (source, rarest class of the group); within one, new groups are dealt in keyed
      hash order to the split furthest below its share (ILSVRC-style per-source rules via ``source_ratios``).
    """
    previous = dict(previous or {})
    source_ratios = dict(source_ratios or {})
    for split in previous.values():
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r} in the previous assignment")
    ids = [r.image_id for r in images]
    if len(set(ids)) != len(ids):
        dup = [k for k, n in Counter(ids).items() if n > 1][:5]
        raise ValueError(f"duplicate image ids: {dup}")

    units: dict[str, list[ImageRecord]] = defaultdict(list)
    for record in images:
        units[_unit_key(record)].append(record)
    class_freq = Counter(c for r in images for c in r.classes)

    assignment: dict[ImageKey, str] = {}
    moved: list[ImageKey] = []
    pending: dict[tuple[str, int], list[tuple[str, str, list[ImageRecord]]]] = defaultdict(list)
    filled: dict[tuple[str, int], Counter[str]] = defaultdict(Counter)

    def stratum_of(members: list[ImageRecord]) -> tuple[str, int]:
        source = min(r.source for r in members)
        classes = set().union(*(r.classes for r in members))
        # Rarest class first, so small classes are spread over the splits before common ones.
        rarest = min(classes, key=lambda c: (class_freq[c], c)) if classes else -1
        return source, rarest

    for key, members in units.items():
        stratum = stratum_of(members)
        old = {previous[r.image_id] for r in members if r.image_id in previous}
        if not old:
            pending[stratum].append((_keyed_rank(seed, key), key, members))
            continue
        eval_splits = old & EVAL_SPLITS
        if len(eval_splits) > 1:
            ids_ = sorted(str(r.image_id) for r in members)
            raise ValueError(f"near-duplicate group {key[2:]} has frozen images in both val and test: {ids_}")
        target = next(iter(eval_splits)) if eval_splits else "train"
        for r in members:
            if previous.get(r.image_id) == "train" and target != "train":
                moved.append(r.image_id)
            assignment[r.image_id] = target
        filled[stratum][target] += len(members)

    for stratum in sorted(pending, key=lambda s: (s[0], s[1])):
        shares = source_ratios.get(stratum[0], ratios).as_tuple()
        counts = filled[stratum]
        total = sum(counts.values())
        for _, _, members in sorted(pending[stratum], key=lambda u: (u[0], u[1])):
            total += len(members)
            # Deal to the split furthest below its share of the stratum; ties go to the earlier split.
            deficits = [shares[i] * total - counts[s] for i, s in enumerate(SPLITS)]
            best = max(
                range(len(SPLITS)), key=lambda i: (deficits[i], -i) if shares[i] > 0 else (float("-inf"), -i)
            )
            split = SPLITS[best]
            counts[split] += len(members)
            for r in members:
                assignment[r.image_id] = split

    per_split = Counter(assignment.values())
    class_counts: dict[int, dict[str, int]] = {}
    for record in images:
        for c in record.classes:
            class_counts.setdefault(c, dict.fromkeys(SPLITS, 0))[assignment[record.image_id]] += 1
    manifest = SplitManifest(
        seed=seed,
        ratios=ratios.as_tuple(),
        source_ratios={s: r.as_tuple() for s, r in sorted(source_ratios.items())},
        counts={s: per_split.get(s, 0) for s in SPLITS},
        class_counts=dict(sorted(class_counts.items())),
        n_groups=len(units),
        moved_to_eval=tuple(moved),
        version_hash=version_hash(assignment, seed, ratios.as_tuple()),
    )
    new = frozenset(r.image_id for r in images if r.image_id not in previous)
    return SplitAssignment(assignment=assignment, manifest=manifest, new_images=new)
