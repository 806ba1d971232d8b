"""Dataset statistics in the manner of the ILSVRC (§3.3.4, Table 3, Fig. 7) and PASCAL VOC (§3, Tables 1-2)
papers, per split: images, instances, classes, classes and instances per image, instances per class, object
scale (box over image area) and clutter (instances per positive image), rendered as Markdown with PNG plots.
Reads any exporter label source (`benchmark.exporters.base.LabelSource`), so the numbers describe exactly
what an export of the same source would hold. No framework: plots use matplotlib (a runtime requirement).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .exporters.base import LabelSource, per_image

# Object scale bins as a share of the image area (ILSVRC Fig. 7 plots the same ratio).
SCALE_EDGES = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0000001)

# Published figures for the comparison table, with where they come from. Only what the reference notes hold:
# ILSVRC 2015 devkit readme (DET data as in 2014) and the devkits' class lists. Nothing else is filled in.
REFERENCE_FIGURES: tuple[dict[str, Any], ...] = (
    {
        "benchmark": "ILSVRC 2014 DET train",
        "classes": 200,
        "images": 456_567,
        "instances": 478_807,
        "source": "ILSVRC 2015 devkit readme (DET train as in 2014)",
    },
    {
        "benchmark": "ILSVRC 2014 DET val",
        "classes": 200,
        "images": 20_121,
        "instances": 55_502,
        "instances_per_class": "31 to 12,823, median 111",
        "source": "ILSVRC 2015 devkit readme (DET val as in 2014)",
    },
    {
        "benchmark": "PASCAL VOC 2012",
        "classes": 20,
        "source": "VOC devkit class list; image and object counts were not among the reference figures at hand",
    },
)


@dataclass
class SplitStats:
    split: str
    images: int = 0
    labelled_images: int = 0  # images with a box or an image-level label
    instances: int = 0
    blacklisted_pairs: int = 0
    negative_pairs: int = 0
    instances_per_class: Counter[str] = field(default_factory=Counter)
    images_per_class: Counter[str] = field(default_factory=Counter)
    classes_per_image: Counter[int] = field(default_factory=Counter)  # number of classes -> images
    instances_per_image: Counter[int] = field(default_factory=Counter)  # among images with a box
    scale_bins: list[int] = field(default_factory=lambda: [0] * (len(SCALE_EDGES) - 1))
    scale_sum: float = 0.0

    def mean_classes_per_image(self) -> float:
        n = sum(self.classes_per_image.values())
        return sum(k * v for k, v in self.classes_per_image.items()) / n if n else 0.0

    def clutter(self) -> float:
        """Mean instances per image that has at least one box."""
        n = sum(self.instances_per_image.values())
        return self.instances / n if n else 0.0

    def mean_scale(self) -> float:
        return self.scale_sum / self.instances if self.instances else 0.0

    def per_class_range(self) -> tuple[int, float, int]:
        values = sorted(self.instances_per_class.values())
        if not values:
            return 0, 0.0, 0
        n = len(values)
        return values[0], (values[(n - 1) // 2] + values[n // 2]) / 2, values[-1]

    def as_dict(self) -> dict[str, Any]:
        low, median, high = self.per_class_range()
        return {
            "split": self.split,
            "images": self.images,
            "labelled_images": self.labelled_images,
            "instances": self.instances,
            "classes_with_instances": len(self.instances_per_class),
            "mean_classes_per_image": round(self.mean_classes_per_image(), 4),
            "clutter": round(self.clutter(), 4),
            "mean_object_scale": round(self.mean_scale(), 4),
            "instances_per_class": {"min": low, "median": median, "max": high},
            "blacklisted_pairs": self.blacklisted_pairs,
            "negative_pairs": self.negative_pairs,
            "scale_bins": self.scale_bins,
        }


def dataset_statistics(source: LabelSource, withheld: Sequence[str] = ()) -> list[SplitStats]:
    """One pass per split over the source's images, boxes, labels and blacklist. Withheld splits (the
    test split of a challenge) report image counts only."""
    names = {c.id: c.name for c in source.categories()}
    out: list[SplitStats] = []
    for split in source.splits():
        stats = SplitStats(split)
        labelled = split not in withheld
        records = per_image(
            source.images(split),
            source.boxes(split) if labelled else (),
            source.labels(split) if labelled else (),
            source.blacklist(split) if labelled else (),
        )
        for record in records:
            stats.images += 1
            if not labelled:
                continue
            positives = record.positive_classes() & names.keys()
            stats.blacklisted_pairs += len(record.blacklisted)
            stats.negative_pairs += len(record.negative_classes() & names.keys())
            if record.boxes or record.labels:
                stats.labelled_images += 1
            stats.classes_per_image[len(positives)] += 1
            for c in positives:
                stats.images_per_class[names[c]] += 1
            boxes = [b for b in record.boxes if b.category_id in names]
            if boxes:
                stats.instances_per_image[len(boxes)] += 1
            area = record.image.width * record.image.height
            for b in boxes:
                stats.instances += 1
                stats.instances_per_class[names[b.category_id]] += 1
                share = (b.x2 - b.x1) * (b.y2 - b.y1) / area if area else 0.0
                stats.scale_sum += share
                stats.scale_bins[_bin(share)] += 1
        out.append(stats)
    return out


def _bin(share: float) -> int:
    for k in range(len(SCALE_EDGES) - 1):
        if share < SCALE_EDGES[k + 1]:
            return k
    return len(SCALE_EDGES) - 2


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3g}" if not math.isnan(value) else "-"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value) if value not in (None, "") else "-"


def markdown(
    title: str, splits: Sequence[SplitStats], plots: Sequence[str] = (), withheld: Sequence[str] = ()
) -> str:
    lines = [f"# {title}", ""]
    lines += [
        "| split | images | labelled images | instances | classes with instances | classes / image | "
        "instances / boxed image (clutter) | mean object scale | instances / class (min, median, max) | "
        "verified negative pairs | blacklisted pairs |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in splits:
        if s.split in withheld:
            lines.append(f"| {s.split} | {s.images:,} | labels withheld | - | - | - | - | - | - | - | - |")
            continue
        low, median, high = s.per_class_range()
        lines.append(
            f"| {s.split} | {s.images:,} | {s.labelled_images:,} | {s.instances:,} | {len(s.instances_per_class)} | "
            f"{s.mean_classes_per_image():.2f} | {s.clutter():.2f} | {s.mean_scale():.3f} | "
            f"{low:,}, {_fmt(median)}, {high:,} | {s.negative_pairs:,} | {s.blacklisted_pairs:,} |"
        )
    lines += [
        "",
        "## Object scale (box area / image area)",
        "",
        "| split | " + " | ".join(scale_bin_names()) + " |",
    ]
    lines.append("|---|" + "---|" * (len(SCALE_EDGES) - 1))
    for s in splits:
        if s.split not in withheld:
            lines.append(f"| {s.split} | " + " | ".join(f"{n:,}" for n in s.scale_bins) + " |")
    lines += ["", "## Instances per class", "", "| class | " + " | ".join(s.split for s in splits) + " |"]
    lines.append("|---|" + "---|" * len(splits))
    classes = sorted({c for s in splits for c in s.instances_per_class})
    for c in classes:
        lines.append(f"| {c} | " + " | ".join(f"{s.instances_per_class[c]:,}" for s in splits) + " |")
    lines += [
        "",
        "## Compared with published benchmarks",
        "",
        "| benchmark | classes | images | instances | instances / class | source |",
        "|---|---|---|---|---|---|",
    ]
    for s in splits:
        if s.split not in withheld:
            low, median, high = s.per_class_range()
            lines.append(
                f"| this dataset ({s.split}) | {len(s.instances_per_class)} | {s.images:,} | {s.instances:,} | "
                f"{low:,} to {high:,}, median {_fmt(median)} | measured here |"
            )
    for ref in REFERENCE_FIGURES:
        lines.append(
            f"| {ref['benchmark']} | {_fmt(ref.get('classes'))} | {_fmt(ref.get('images'))} | "
            f"{_fmt(ref.get('instances'))} | {_fmt(ref.get('instances_per_class'))} | {ref['source']} |"
        )
    if plots:
        lines += ["", "## Plots", ""] + [f"![{Path(p).stem}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def scale_bin_names() -> list[str]:
    """The object-scale bins' names (box area over image area), e.g. 1%-5%."""
    names = []
    for k in range(len(SCALE_EDGES) - 1):
        hi = min(SCALE_EDGES[k + 1], 1.0)
        names.append(f"{SCALE_EDGES[k]:.0%}-{hi:.0%}")
    return names


def write_plots(splits: Sequence[SplitStats], directory: Path, withheld: Sequence[str] = ()) -> list[str]:
    """PNG plots (object scale and classes per image, one series per split); returns their file names."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on servers
    import matplotlib.pyplot as plt

    shown = [s for s in splits if s.split not in withheld and s.images]
    if not shown:
        return []
    directory.mkdir(parents=True, exist_ok=True)
    files = []
    fig, ax = plt.subplots(figsize=(7, 3.4), dpi=100)
    width = 0.8 / len(shown)
    for k, s in enumerate(shown):
        total = max(s.instances, 1)
        ax.bar(
            [x + k * width for x in range(len(s.scale_bins))],
            [n / total for n in s.scale_bins],
            width,
            label=s.split,
        )
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(SCALE_EDGES) - 1)], scale_bin_names(), fontsize=8)
    ax.set_ylabel("share of instances")
    ax.set_title("Object scale (box area / image area)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(directory / "object_scale.png")
    plt.close(fig)
    files.append("object_scale.png")

    fig, ax = plt.subplots(figsize=(7, 3.4), dpi=100)
    top = max(max(s.classes_per_image, default=0) for s in shown)
    for k, s in enumerate(shown):
        total = max(sum(s.classes_per_image.values()), 1)
        ax.bar(
            [x + k * width for x in range(top + 1)],
            [s.classes_per_image[x] / total for x in range(top + 1)],
            width,
            label=s.split,
        )
    ax.set_xticks([x + 0.4 - width / 2 for x in range(top + 1)], [str(x) for x in range(top + 1)])
    ax.set_xlabel("classes per image")
    ax.set_ylabel("share of images")
    ax.set_title("Classes per image")
    ax.legend()
    fig.tight_layout()
    fig.savefig(directory / "classes_per_image.png")
    plt.close(fig)
    files.append("classes_per_image.png")
    return files


def write_report(source: LabelSource, directory: Path, withheld: Sequence[str] = ()) -> dict[str, Any]:
    """``README.md``, ``statistics.json`` and the PNG plots in ``directory``; returns the JSON figures."""
    import json

    splits = dataset_statistics(source, withheld)
    plots = write_plots(splits, directory, withheld)
    directory.mkdir(parents=True, exist_ok=True)
    title = f"Dataset statistics: {source.dataset_name} ({source.dataset_version})"
    (directory / "README.md").write_text(markdown(title, splits, plots, withheld))
    figures = {
        "dataset": source.dataset_name,
        "version": source.dataset_version,
        "withheld": list(withheld),
        "splits": [s.as_dict() for s in splits if s.split not in withheld],
        "references": list(REFERENCE_FIGURES),
    }
    (directory / "statistics.json").write_text(json.dumps(figures, indent=1) + "\n")
    return figures
