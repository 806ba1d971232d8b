import io
from itertools import combinations

import numpy as np
import pytest
from PIL import Image

from simulator.scenes import (
    SceneClass,
    SceneSpec,
    class_appearance,
    default_groups,
    generate_scene,
    generate_scenes,
)

KEYS = [f"n{i:08d}" for i in range(200)]
SMALL = {"width_range": (300, 360), "height_range": (220, 260)}


@pytest.fixture(scope="module")
def many_scenes():
    return generate_scenes(KEYS, SceneSpec(n_images=150, seed=11, mean_classes=2.5, **SMALL))


def test_same_seed_gives_same_bytes_and_objects():
    spec = SceneSpec(n_images=3, seed=5, **SMALL)
    a, b = generate_scenes(KEYS, spec), generate_scenes(KEYS, spec)
    assert [s.image_bytes for s in a] == [s.image_bytes for s in b]
    assert [s.objects for s in a] == [s.objects for s in b]


def test_different_seed_gives_different_images():
    a = generate_scenes(KEYS, SceneSpec(n_images=2, seed=5, **SMALL))
    b = generate_scenes(KEYS, SceneSpec(n_images=2, seed=6, **SMALL))
    assert a[0].image_bytes != b[0].image_bytes
    assert a[1].image_bytes != b[1].image_bytes


def test_single_scene_matches_its_place_in_the_sequence():
    spec = SceneSpec(n_images=4, seed=2, **SMALL)
    assert generate_scene(KEYS, spec, 3) == generate_scenes(KEYS, spec)[3]


def test_images_decode_with_declared_size(many_scenes):
    for scene in many_scenes[:10]:
        img = Image.open(io.BytesIO(scene.image_bytes))
        assert img.format == "JPEG"
        assert img.size == (scene.width, scene.height)


def test_png_format_is_lossless_png():
    scene = generate_scene(KEYS, SceneSpec(seed=1, image_format="PNG", **SMALL), 0)
    assert scene.image_bytes.startswith(b"\x89PNG")
    assert Image.open(io.BytesIO(scene.image_bytes)).size == (scene.width, scene.height)


def test_boxes_lie_inside_the_image_and_are_not_empty(many_scenes):
    for scene in many_scenes:
        for o in scene.objects:
            assert 0 <= o.x1 < o.x2 <= scene.width
            assert 0 <= o.y1 < o.y2 <= scene.height
            assert 0 < o.visible_pixels <= o.width * o.height


def test_occlusion_stays_under_the_limit_and_some_objects_overlap(many_scenes):
    fractions = np.array([o.occluded_fraction for s in many_scenes for o in s.objects])
    assert fractions.max() <= 0.6 + 1e-9
    assert (fractions > 0.05).mean() > 0.03


@pytest.mark.parametrize("mean_classes", [1.5, 2.5])
def test_requested_classes_per_image_are_reached(mean_classes):
    scenes = generate_scenes(KEYS, SceneSpec(n_images=150, seed=3, mean_classes=mean_classes, **SMALL))
    measured = np.mean([len(s.class_keys) for s in scenes])
    assert abs(measured - mean_classes) < 0.2
    assert all(len(s.class_keys) >= 1 for s in scenes)


def test_several_instances_per_class_on_average(many_scenes):
    per_class = [sum(1 for o in s.objects if o.class_key == k) for s in many_scenes for k in s.class_keys]
    assert 1.5 < np.mean(per_class) < 2.2
    assert max(per_class) >= 4


def test_tiny_and_large_objects_are_both_present():
    scenes = generate_scenes(KEYS, SceneSpec(n_images=40, seed=4))
    longest = np.array([max(o.width, o.height) for s in scenes for o in s.objects])
    assert (longest < 25).mean() > 0.05
    assert (longest > 150).mean() > 0.05


def test_classes_co_occur_within_their_scene_group(many_scenes):
    group_of = {k: i for i, g in enumerate(default_groups(KEYS, 11, 8)) for k in g}
    pairs = [(a, b) for s in many_scenes for a, b in combinations(sorted(s.class_keys), 2)]
    same = np.mean([group_of[a] == group_of[b] for a, b in pairs])
    assert same > 0.5  # uniform choice would give about 7 / 199


def test_explicit_groups_and_weights_are_honoured():
    classes = [SceneClass("cat"), SceneClass("dog"), SceneClass("car"), SceneClass("bus", weight=0.0)]
    spec = SceneSpec(
        n_images=40, seed=1, mean_classes=2, scene_coherence=1.0, groups=(("cat", "dog"),), **SMALL
    )
    for scene in generate_scenes(classes, spec):
        assert "bus" not in scene.class_keys
        assert scene.class_keys <= {"cat", "dog", "car"}


def test_empty_rate_yields_images_without_objects():
    scenes = generate_scenes(KEYS, SceneSpec(n_images=60, seed=1, empty_rate=0.5, **SMALL))
    empty = sum(1 for s in scenes if not s.objects)
    assert 15 <= empty <= 45


def test_class_look_is_stable_and_varies_between_classes():
    assert class_appearance("n02084071") == class_appearance("n02084071")
    looks = {
        (a.shape, a.pattern, a.primary[0] // 32, a.primary[1] // 32, a.primary[2] // 32)
        for a in map(class_appearance, KEYS[:20])
    }
    assert len(looks) >= 18


def test_objects_are_painted_in_their_class_colours():
    spec = SceneSpec(n_images=20, seed=8, image_format="PNG", **SMALL)
    checked = 0
    for scene in generate_scenes(KEYS, spec):
        pixels = np.asarray(Image.open(io.BytesIO(scene.image_bytes)).convert("RGB"), dtype=np.float64)
        for o in scene.objects:
            if o.occluded_fraction > 0 or o.width < 30 or o.height < 30:
                continue
            app = class_appearance(o.class_key)
            cy, cx = (o.y1 + o.y2) // 2, (o.x1 + o.x2) // 2
            patch = pixels[cy - 2 : cy + 3, cx - 2 : cx + 3].reshape(-1, 3)
            # Each pixel is the primary or secondary colour times the instance's shade (0.85-1.15), so its
            # direction in RGB space matches one of them; the dark outline of a thin part is also allowed.
            for px in patch:
                cosines = [
                    px @ np.array(c) / (np.linalg.norm(px) * np.linalg.norm(c) + 1e-9)
                    for c in (app.primary, app.secondary)
                ]
                assert max(cosines) > 0.995 or px.max() < 90 or px.max() == 255
            checked += 1
    assert checked >= 5


def test_boxes_by_class_groups_instances():
    scene = generate_scene(KEYS, SceneSpec(seed=9, mean_classes=3, **SMALL), 0)
    boxes = scene.boxes_by_class()
    assert set(boxes) == scene.class_keys
    assert sum(len(b) for b in boxes.values()) == len(scene.objects)
    assert all(b.shape[1] == 4 for b in boxes.values())
