"""Split assignment: deterministic, stratified, frozen across versions, near-duplicates kept together."""

from collections import Counter

import numpy as np
import pytest

from benchmark.splits import ImageRecord, SplitRatios, make_splits

RATIOS = SplitRatios(0.6, 0.13, 0.27)


def dataset(n, seed=0, n_classes=12, group_rate=0.15, start=0):
    rng = np.random.default_rng(seed)
    records = []
    for i in range(start, start + n):
        classes = frozenset(
            int(c) for c in rng.choice(n_classes, size=int(rng.integers(1, 3)), replace=False)
        )
        group = f"dup{int(rng.integers(0, n // 20 + 1))}-{seed}" if rng.random() < group_rate else None
        records.append(ImageRecord(i, classes, group=group, source="crawl"))
    return records


def test_same_input_and_seed_give_the_same_assignment_and_version_hash():
    images = dataset(500)
    a = make_splits(images, RATIOS, seed=0)
    b = make_splits(list(reversed(images)), RATIOS, seed=0)
    assert a.assignment == b.assignment
    assert a.manifest.version_hash == b.manifest.version_hash
    c = make_splits(images, RATIOS, seed=1)
    assert c.assignment != a.assignment
    assert c.manifest.version_hash != a.manifest.version_hash


def test_ratios_hold_overall_and_within_every_class():
    images = dataset(3000, n_classes=6)
    result = make_splits(images, RATIOS, seed=0)
    counts = result.manifest.counts
    assert sum(counts.values()) == 3000
    for split, share in zip(("train", "val", "test"), RATIOS.as_tuple(), strict=True):
        assert counts[split] / 3000 == pytest.approx(share, abs=0.02)
    for per_split in result.manifest.class_counts.values():
        total = sum(per_split.values())
        assert per_split["val"] / total == pytest.approx(0.13, abs=0.05)
        assert per_split["test"] / total == pytest.approx(0.27, abs=0.05)


def test_a_rare_class_still_reaches_every_split():
    images = dataset(400, n_classes=5)
    rare = [ImageRecord(1000 + i, frozenset({99})) for i in range(8)]
    result = make_splits(images + rare, RATIOS, seed=0)
    assert all(v > 0 for v in result.manifest.class_counts[99].values())


def test_near_duplicates_never_straddle_two_splits():
    images = dataset(1000, group_rate=0.4)
    result = make_splits(images, RATIOS, seed=0)
    by_group: dict[str, set[str]] = {}
    for r in images:
        if r.group is not None:
            by_group.setdefault(r.group, set()).add(result.assignment[r.image_id])
    assert by_group and all(len(splits) == 1 for splits in by_group.values())


def test_adding_images_moves_no_old_image_and_keeps_ratios():
    old = dataset(1000, seed=1)
    first = make_splits(old, RATIOS, seed=0)
    new = dataset(500, seed=2, start=1000)
    second = make_splits(old + new, RATIOS, seed=0, previous=first.assignment)
    assert all(second.assignment[r.image_id] == first.assignment[r.image_id] for r in old)
    assert second.new_images == {r.image_id for r in new}
    share = Counter(second.assignment[r.image_id] for r in new)
    assert share["test"] / 500 == pytest.approx(0.27, abs=0.05)
    assert second.manifest.version_hash != first.manifest.version_hash


def test_a_new_near_duplicate_joins_its_groups_frozen_split():
    old = [ImageRecord(1, frozenset({1}), group="g"), ImageRecord(2, frozenset({2}))]
    frozen = {1: "test", 2: "train"}
    result = make_splits(old + [ImageRecord(3, frozenset({1}), group="g")], RATIOS, previous=frozen)
    assert result.assignment == {1: "test", 2: "train", 3: "test"}


def test_old_train_duplicates_of_an_evaluation_image_are_pulled_into_its_split():
    images = [ImageRecord(1, group="g"), ImageRecord(2, group="g")]
    result = make_splits(images, RATIOS, previous={1: "val", 2: "train"})
    assert result.assignment == {1: "val", 2: "val"}
    assert result.manifest.moved_to_eval == (2,)


def test_a_group_frozen_in_both_val_and_test_is_refused():
    images = [ImageRecord(1, group="g"), ImageRecord(2, group="g")]
    with pytest.raises(ValueError, match="both val and test"):
        make_splits(images, RATIOS, previous={1: "val", 2: "test"})


def test_per_source_rules_override_the_default_ratios():
    images = [
        ImageRecord(i, frozenset({i % 4}), source="det-val" if i < 600 else "crawl") for i in range(1200)
    ]
    result = make_splits(images, RATIOS, source_ratios={"det-val": SplitRatios(0.0, 0.33, 0.67)})
    det = Counter(result.assignment[i] for i in range(600))
    assert det["train"] == 0
    assert det["val"] / 600 == pytest.approx(0.33, abs=0.02)
    assert result.manifest.source_ratios == {"det-val": (0.0, 0.33, 0.67)}


def test_bad_ratios_and_duplicate_ids_are_refused():
    with pytest.raises(ValueError, match="sum to 1"):
        SplitRatios(0.6, 0.2, 0.3)
    with pytest.raises(ValueError, match="duplicate image ids"):
        make_splits([ImageRecord(1), ImageRecord(1)], RATIOS)
