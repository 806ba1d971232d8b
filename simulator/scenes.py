"""Seeded synthetic scenes with known objects: the images the simulated crowd annotates and the ground truth
the simulator keeps to itself (it never enters the platform's database).

Each scene holds a few classes that co-occur the way scenes do (ILSVRC DET images show few classes each,
ILSVRC §3.3), several instances per class, sizes from tiny (< 25 px) to large, and some overlap. Every class
is drawn with its own shape, colour and texture, derived from its key, so a person could tell the classes apart.
"""

from __future__ import annotations

import colorsys
import functools
import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageDraw

SHAPES = ("ellipse", "rectangle", "triangle", "diamond", "hexagon", "cross", "star", "rounded")
PATTERNS = ("solid", "hstripes", "vstripes", "diagonal", "dots", "checker")

# A separate stream for the class groups so that adding images never changes the groups.
_GROUPS_STREAM = 0x5CE7E5
_IMAGE_STREAM = 1
_GRAIN_STREAM = 0x6A1
_MAX_SIDE = 2048


@dataclass(frozen=True)
class SceneClass:
    """A class that may appear in scenes; `weight` is its relative frequency outside its scene group."""

    key: str
    name: str = ""
    weight: float = 1.0


@dataclass(frozen=True)
class SceneObject:
    """One instance: its visible box in pixels (x2, y2 exclusive, so width = x2 - x1) and how much of its
    shape later objects cover."""

    class_key: str
    x1: int
    y1: int
    x2: int
    y2: int
    occluded_fraction: float
    visible_pixels: int

    @property
    def box(self) -> tuple[int, int, int, int]:
        return (self.x1, self.y1, self.x2, self.y2)

    @property
    def width(self) -> int:
        return self.x2 - self.x1

    @property
    def height(self) -> int:
        return self.y2 - self.y1


@dataclass(frozen=True)
class Scene:
    index: int
    image_bytes: bytes
    width: int
    height: int
    objects: tuple[SceneObject, ...]
    image_format: str = "JPEG"

    @property
    def class_keys(self) -> frozenset[str]:
        return frozenset(o.class_key for o in self.objects)

    def boxes_by_class(self) -> dict[str, np.ndarray]:
        """True boxes per class as float arrays of shape (N, 4): the form `simulator.ground_truth` takes."""
        out: dict[str, list[tuple[int, int, int, int]]] = {}
        for o in self.objects:
            out.setdefault(o.class_key, []).append(o.box)
        return {k: np.asarray(v, dtype=np.float64).reshape(-1, 4) for k, v in out.items()}


@dataclass(frozen=True)
class SceneSpec:
    """How many scenes, how big, how crowded. Defaults follow ILSVRC DET val (2014): about 1.5-3 classes and
    2.8 objects per image; `tiny_rate` of objects have their longest side under 25 px."""

    n_images: int = 200
    seed: int = 0
    width_range: tuple[int, int] = (560, 720)
    height_range: tuple[int, int] = (420, 540)
    mean_classes: float = 2.0
    max_classes: int = 6
    empty_rate: float = 0.0
    mean_instances: float = 1.8
    max_instances: int = 6
    tiny_rate: float = 0.12
    max_object_fraction: float = 0.6
    max_occlusion: float = 0.6
    scene_coherence: float = 0.8
    group_size: int = 8
    image_format: str = "JPEG"
    jpeg_quality: int = 90
    groups: tuple[tuple[str, ...], ...] | None = field(default=None)

    def __post_init__(self) -> None:
        if self.mean_classes < 1:
            raise ValueError("mean_classes must be >= 1 (empty images are asked for with empty_rate)")
        if self.mean_instances < 1:
            raise ValueError("mean_instances must be >= 1")
        if max(self.width_range[1], self.height_range[1]) > _MAX_SIDE:
            raise ValueError(f"scenes are at most {_MAX_SIDE} px on a side")
        if self.image_format not in ("PNG", "JPEG"):
            raise ValueError("image_format must be PNG or JPEG")


# Scenes for `simulate --crowd hostile` (overrides of SceneSpec): three times as many tiny objects, more
# instances per class and more classes per image, so lazy drawers and small-object misses show.
HOSTILE_SCENES: dict[str, float] = {"tiny_rate": 0.35, "mean_instances": 2.3, "mean_classes": 2.4}


@dataclass(frozen=True)
class ClassAppearance:
    shape: str
    pattern: str
    primary: tuple[int, int, int]
    secondary: tuple[int, int, int]
    aspect: float


def class_appearance(key: str) -> ClassAppearance:
    """The look of a class, a pure function of its key (a stable hash, not Python's salted `hash`)."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    hue = digest[0] / 256.0
    sat = 0.55 + 0.4 * digest[1] / 255.0
    val = 0.6 + 0.35 * digest[2] / 255.0
    primary = colorsys.hsv_to_rgb(hue, sat, val)
    # Secondary colour: a shifted hue, darker, so stripes and dots read against the primary.
    secondary = colorsys.hsv_to_rgb((hue + 0.33 + 0.34 * digest[3] / 255.0) % 1.0, sat, val * 0.55)
    aspect = float(np.exp((digest[6] / 255.0 - 0.5) * 1.0))  # 0.61 .. 1.65
    return ClassAppearance(
        shape=SHAPES[digest[4] % len(SHAPES)],
        pattern=PATTERNS[digest[5] % len(PATTERNS)],
        primary=_rgb255(primary),
        secondary=_rgb255(secondary),
        aspect=aspect,
    )


def default_groups(keys: Sequence[str], seed: int, group_size: int = 8) -> tuple[tuple[str, ...], ...]:
    """Scene groups when none are given: a seeded partition of the classes into groups of `group_size`."""
    rng = np.random.default_rng([seed, _GROUPS_STREAM])
    order = rng.permutation(len(keys))
    shuffled = [keys[i] for i in order]
    return tuple(tuple(shuffled[i : i + group_size]) for i in range(0, len(shuffled), max(1, group_size)))


def generate_scenes(classes: Sequence[SceneClass | str], spec: SceneSpec) -> list[Scene]:
    """`spec.n_images` scenes; scene i depends only on (seed, i, classes, spec), never on the others."""
    norm = _normalise(classes)
    groups = _groups_for(norm, spec)
    return [_generate(norm, groups, spec, i) for i in range(spec.n_images)]


def generate_scene(classes: Sequence[SceneClass | str], spec: SceneSpec, index: int) -> Scene:
    """Scene number `index` of the sequence `generate_scenes` would return (same bytes)."""
    norm = _normalise(classes)
    return _generate(norm, _groups_for(norm, spec), spec, index)


# --- internals -------------------------------------------------------------------------------------------


def _rgb255(rgb: tuple[float, float, float]) -> tuple[int, int, int]:
    return (round(rgb[0] * 255), round(rgb[1] * 255), round(rgb[2] * 255))


def _normalise(classes: Sequence[SceneClass | str]) -> list[SceneClass]:
    out = [c if isinstance(c, SceneClass) else SceneClass(key=c) for c in classes]
    if not out:
        raise ValueError("at least one class is needed")
    if len({c.key for c in out}) != len(out):
        raise ValueError("class keys must be unique")
    return out


def _groups_for(classes: list[SceneClass], spec: SceneSpec) -> tuple[tuple[str, ...], ...]:
    keys = [c.key for c in classes]
    if spec.groups is None:
        return default_groups(keys, spec.seed, spec.group_size)
    known = set(keys)
    groups = tuple(tuple(k for k in g if k in known) for g in spec.groups)
    groups = tuple(g for g in groups if g)
    if not groups:
        raise ValueError("no scene group names a known class")
    return groups


def _choose_classes(
    rng: np.random.Generator, classes: list[SceneClass], groups: tuple[tuple[str, ...], ...], spec: SceneSpec
) -> list[str]:
    if spec.empty_rate > 0 and rng.random() < spec.empty_rate:
        return []
    n = 1 + int(rng.poisson(spec.mean_classes - 1.0))
    n = min(n, spec.max_classes, len(classes))
    group = list(groups[int(rng.integers(len(groups)))])
    keys = [c.key for c in classes]
    weights = np.array([max(c.weight, 0.0) for c in classes], dtype=np.float64)
    chosen: list[str] = []
    for _ in range(n):
        in_group = [k for k in group if k not in chosen]
        if in_group and rng.random() < spec.scene_coherence:
            chosen.append(in_group[int(rng.integers(len(in_group)))])
            continue
        w = weights.copy()
        for k in chosen:
            w[keys.index(k)] = 0.0
        if w.sum() <= 0:
            break
        chosen.append(keys[int(rng.choice(len(keys), p=w / w.sum()))])
    return chosen


def _object_sizes(
    rng: np.random.Generator, key: str, n: int, width: int, height: int, spec: SceneSpec
) -> list[tuple[int, int]]:
    base_aspect = class_appearance(key).aspect
    largest = max(30.0, spec.max_object_fraction * min(width, height))
    sizes = []
    for _ in range(n):
        if rng.random() < spec.tiny_rate:
            side = rng.uniform(9.0, 24.0)
        else:
            side = float(np.exp(rng.uniform(np.log(25.0), np.log(largest))))
        aspect = base_aspect * float(np.exp(rng.normal(0.0, 0.15)))
        # `side` is the longest side, so a tiny object stays tiny whatever its aspect.
        if aspect >= 1:
            w, h = side, side / aspect
        else:
            w, h = side * aspect, side
        sizes.append((max(6, int(round(w))), max(6, int(round(h)))))
    return sizes


def _shape_mask(shape: str, w: int, h: int) -> np.ndarray:
    img = Image.new("L", (w, h), 0)
    d = ImageDraw.Draw(img)
    x2, y2 = w - 1, h - 1
    cx, cy = x2 / 2, y2 / 2
    if shape == "ellipse":
        d.ellipse((0, 0, x2, y2), fill=255)
    elif shape == "rectangle":
        d.rectangle((0, 0, x2, y2), fill=255)
    elif shape == "rounded":
        d.rounded_rectangle((0, 0, x2, y2), radius=max(1, min(w, h) // 4), fill=255)
    elif shape == "triangle":
        d.polygon([(cx, 0), (x2, y2), (0, y2)], fill=255)
    elif shape == "diamond":
        d.polygon([(cx, 0), (x2, cy), (cx, y2), (0, cy)], fill=255)
    elif shape == "hexagon":
        q = w / 4
        d.polygon([(q, 0), (x2 - q, 0), (x2, cy), (x2 - q, y2), (q, y2), (0, cy)], fill=255)
    elif shape == "cross":
        tw, th = max(2, w // 3), max(2, h // 3)
        d.rectangle(((w - tw) // 2, 0, (w - tw) // 2 + tw - 1, y2), fill=255)
        d.rectangle((0, (h - th) // 2, x2, (h - th) // 2 + th - 1), fill=255)
    elif shape == "star":
        pts = []
        for i in range(10):
            r = 1.0 if i % 2 == 0 else 0.45
            a = -np.pi / 2 + i * np.pi / 5
            pts.append((cx + r * cx * np.cos(a), cy + r * cy * np.sin(a)))
        d.polygon(pts, fill=255)
    else:  # pragma: no cover - SHAPES is closed
        raise ValueError(shape)
    return np.asarray(img) > 0


def _texture(app: ClassAppearance, w: int, h: int, shade: float) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    period = int(np.clip(min(w, h) / 3, 3, 14))
    half = max(1, period // 2)
    if app.pattern == "solid":
        sec = np.zeros((h, w), dtype=bool)
    elif app.pattern == "hstripes":
        sec = (yy % period) < half
    elif app.pattern == "vstripes":
        sec = (xx % period) < half
    elif app.pattern == "diagonal":
        sec = ((xx + yy) % period) < half
    elif app.pattern == "dots":
        sec = ((xx % period - half) ** 2 + (yy % period - half) ** 2) <= max(1, half // 2 + 1) ** 2
    else:  # checker
        sec = ((xx // half) + (yy // half)) % 2 == 0
    prim = np.array(app.primary, dtype=np.float32) * shade
    secd = np.array(app.secondary, dtype=np.float32) * shade
    tex = np.where(sec[..., None], secd, prim)
    return np.clip(tex, 0, 255).astype(np.uint8)


def _edge(mask: np.ndarray) -> np.ndarray:
    """Pixels of the mask with a 4-neighbour outside it: a dark outline keeps the shape legible."""
    inner = mask.copy()
    inner[1:, :] &= mask[:-1, :]
    inner[:-1, :] &= mask[1:, :]
    inner[:, 1:] &= mask[:, :-1]
    inner[:, :-1] &= mask[:, 1:]
    inner[0, :] = inner[-1, :] = False
    inner[:, 0] = inner[:, -1] = False
    return mask & ~inner


@functools.cache
def _grain_tile() -> np.ndarray:
    rng = np.random.default_rng(_GRAIN_STREAM)
    return rng.integers(0, 29, size=(_MAX_SIDE * 2, _MAX_SIDE * 2, 1), dtype=np.uint8)


def _background(rng: np.random.Generator, width: int, height: int) -> np.ndarray:
    base = rng.uniform(70, 190, size=3)
    cells = (height // 40 + 2, width // 40 + 2)
    # Mostly light/dark blotches with a little colour, like an out-of-focus backdrop.
    coarse = base + rng.normal(0, 24, size=(*cells, 1)) + rng.normal(0, 8, size=(*cells, 3))
    # Clipped to [14, 227] so adding grain in [0, 28] stays inside uint8 without a wider dtype.
    small = Image.fromarray(np.clip(coarse, 14, 227).astype(np.uint8), "RGB")
    smooth = np.asarray(small.resize((width, height), Image.Resampling.BILINEAR))
    # Film grain: a window of one shared tile at a per-image offset (drawing fresh noise for every pixel
    # of every image costs more than the rest of the scene).
    tile = _grain_tile()
    oy = int(rng.integers(0, tile.shape[0] - height + 1))
    ox = int(rng.integers(0, tile.shape[1] - width + 1))
    out = smooth + tile[oy : oy + height, ox : ox + width]
    out -= np.uint8(14)
    return out


def _generate(
    classes: list[SceneClass], groups: tuple[tuple[str, ...], ...], spec: SceneSpec, index: int
) -> Scene:
    rng = np.random.default_rng([spec.seed, _IMAGE_STREAM, index])
    width = int(rng.integers(spec.width_range[0], spec.width_range[1] + 1))
    height = int(rng.integers(spec.height_range[0], spec.height_range[1] + 1))
    canvas = _background(rng, width, height)

    planned: list[tuple[str, int, int]] = []
    for key in _choose_classes(rng, classes, groups, spec):
        n = min(spec.max_instances, 1 + int(rng.poisson(spec.mean_instances - 1.0)))
        planned.extend((key, w, h) for w, h in _object_sizes(rng, key, n, width, height, spec))
    # Large objects go down first so small ones lie on top, as clutter does in photos.
    planned.sort(key=lambda p: -(p[1] * p[2]))

    owner = np.full((height, width), -1, dtype=np.int32)
    placed: list[tuple[str, int, int, int, int, int]] = []  # key, x, y, w, h, full area
    visible: list[int] = []
    for key, w, h in planned:
        spot = _place(rng, key, w, h, owner, placed, visible, spec)
        if spot is None:
            continue
        x, y, w, h, mask, counts = spot
        idx = len(placed)
        app = class_appearance(key)
        tex = _texture(app, w, h, shade=float(rng.uniform(0.85, 1.15)))
        tex[_edge(mask)] = (tex[_edge(mask)] * 0.35).astype(np.uint8)
        region = canvas[y : y + h, x : x + w]
        region[mask] = tex[mask]
        owner[y : y + h, x : x + w][mask] = idx
        for j, c in enumerate(counts):
            visible[j] -= int(c)
        placed.append((key, x, y, w, h, int(mask.sum())))
        visible.append(int(mask.sum()))

    objects = []
    for idx, (key, x, y, w, h, area) in enumerate(placed):
        ys, xs = np.nonzero(owner[y : y + h, x : x + w] == idx)
        if len(xs) == 0:  # pragma: no cover - _place never lets an object vanish
            continue
        objects.append(
            SceneObject(
                class_key=key,
                x1=x + int(xs.min()),
                y1=y + int(ys.min()),
                x2=x + int(xs.max()) + 1,
                y2=y + int(ys.max()) + 1,
                occluded_fraction=round(1.0 - len(xs) / area, 4),
                visible_pixels=int(len(xs)),
            )
        )
    return Scene(
        index=index,
        image_bytes=_encode(canvas, spec),
        width=width,
        height=height,
        objects=tuple(objects),
        image_format=spec.image_format,
    )


def _place(
    rng: np.random.Generator,
    key: str,
    w: int,
    h: int,
    owner: np.ndarray,
    placed: list[tuple[str, int, int, int, int, int]],
    visible: list[int],
    spec: SceneSpec,
) -> tuple[int, int, int, int, np.ndarray, np.ndarray] | None:
    """A position where the new object leaves every earlier one at least (1 - max_occlusion) visible;
    after repeated failures the object shrinks, so a chosen class is almost never lost."""
    height, width = owner.shape
    shape = class_appearance(key).shape
    for attempt in range(30):
        if attempt and attempt % 10 == 0:
            w, h = max(6, int(w * 0.7)), max(6, int(h * 0.7))
        w, h = min(w, width), min(h, height)
        mask = _shape_mask(shape, w, h)
        x = int(rng.integers(0, width - w + 1))
        y = int(rng.integers(0, height - h + 1))
        under = owner[y : y + h, x : x + w][mask]
        under = under[under >= 0]
        counts = np.bincount(under, minlength=len(placed))
        ok = True
        for j, c in enumerate(counts):
            if c == 0:
                continue
            left = visible[j] - int(c)
            if left < 12 or left < (1.0 - spec.max_occlusion) * placed[j][5]:
                ok = False
                break
        if ok:
            return x, y, w, h, mask, counts
    return None


def _encode(canvas: np.ndarray, spec: SceneSpec) -> bytes:
    buf = io.BytesIO()
    img = Image.fromarray(canvas, "RGB")
    if spec.image_format == "JPEG":
        img.save(buf, format="JPEG", quality=spec.jpeg_quality)
    else:
        # Level 1: the scenes are noisy, higher levels cost time and save little.
        img.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()
