"""The Statistics page's report: the figures of `manage.py dataset_stats` (`benchmark.dataset_stats`, the same
pure core over the same label source as the exports) for one of the organizer's datasets, a split version and
optionally a detection set, plus the bar geometry of its two plots, drawn server-side as SVG by the template
(the page runs no script). The test split's labels are withheld, as the command does without
``--include-test``: the page shows its image count only."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from annotation.models import Dataset
from benchmark.dataset_stats import REFERENCE_FIGURES, SCALE_EDGES, SplitStats, dataset_statistics
from benchmark.models import DetectionSet, SplitVersion
from benchmark.services import export_source

WITHHELD = ("test",)


class StatisticsChoiceError(ValueError):
    """A split version or detection set the dataset does not have; `param` names the query parameter."""

    def __init__(self, param: str, message: str):
        super().__init__(message)
        self.param = param


def scale_bin_names() -> list[str]:
    names = []
    for k in range(len(SCALE_EDGES) - 1):
        hi = min(SCALE_EDGES[k + 1], 1.0)
        names.append(f"{SCALE_EDGES[k]:.0%}-{hi:.0%}")
    return names


def choices(dataset: Dataset, split_version: str | None, detection_set: str | None):
    """The split version (by number; default: the latest frozen, else the latest) and detection set (by name;
    default none) a request names, or StatisticsChoiceError naming the parameter."""
    version = None
    if split_version not in (None, ""):
        if re.fullmatch(r"[0-9]{1,9}", str(split_version)) is None:
            raise StatisticsChoiceError(
                "split_version", f"split_version must be a version number, not {split_version!r}"
            )
        version = SplitVersion.objects.filter(dataset=dataset, number=int(split_version)).first()
        if version is None:
            raise StatisticsChoiceError(
                "split_version", f"dataset {dataset.name} has no split version {split_version}"
            )
    chosen_set = None
    if detection_set not in (None, ""):
        chosen_set = DetectionSet.objects.filter(dataset=dataset, name=detection_set).first()
        if chosen_set is None:
            raise StatisticsChoiceError(
                "detection_set", f"dataset {dataset.name} has no detection set {detection_set!r}"
            )
    return version, chosen_set


def _split_figures(s: SplitStats) -> dict[str, Any]:
    figures = s.as_dict()
    images_with_counts = max(sum(s.classes_per_image.values()), 1)
    top = max(s.classes_per_image, default=0)
    figures["classes_per_image"] = [
        {
            "classes": k,
            "images": s.classes_per_image[k],
            "share": round(s.classes_per_image[k] / images_with_counts, 4),
        }
        for k in range(top + 1)
    ]
    total = max(s.instances, 1)
    figures["scale_histogram"] = [
        {"bin": name, "instances": n, "share": round(n / total, 4)}
        for name, n in zip(scale_bin_names(), s.scale_bins, strict=True)
    ]
    figures["per_class"] = [
        {"name": name, "instances": n, "images": s.images_per_class[name]}
        for name, n in sorted(s.instances_per_class.items(), key=lambda item: (-item[1], item[0]))
    ]
    return figures


def dataset_report(
    dataset: Dataset, version: SplitVersion | None = None, detection_set: DetectionSet | None = None
) -> dict[str, Any]:
    """The report's figures: per split (labels withheld for the test split), the comparison rows with their
    sources, and what the pickers offer."""
    source = export_source(dataset, "all", version, detection_set)
    splits = dataset_statistics(source, WITHHELD)
    return {
        "dataset": dataset.pk,
        "version": source.dataset_version,
        "split_version": source.version.number if source.version is not None else None,
        "detection_set": detection_set.name if detection_set is not None else None,
        "withheld": [{"split": s.split, "images": s.images} for s in splits if s.split in WITHHELD],
        "splits": [_split_figures(s) for s in splits if s.split not in WITHHELD],
        "references": [dict(ref) for ref in REFERENCE_FIGURES],
        "split_versions": list(
            SplitVersion.objects.filter(dataset=dataset).order_by("-number").values_list("number", flat=True)
        ),
        "detection_sets": list(
            DetectionSet.objects.filter(dataset=dataset).order_by("name").values_list("name", flat=True)
        ),
    }


def bar_chart(
    categories: Sequence[str], series: Sequence[tuple[str, Sequence[float]]], *, width: int = 640
) -> dict[str, Any]:
    """Grouped bars of shares (0..1): one group per category, one bar per series, for an SVG of
    ``width`` x 240 units. Returns the bars (with their value for a tooltip), the axis ticks and the legend."""
    height, left, right, top, bottom = 240, 48, 8, 28, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max((v for _, values in series for v in values), default=0.0)
    scale_top = max(peak, 0.0001)
    slot = plot_w / max(len(categories), 1)
    bar_w = (slot - 8) / max(len(series), 1)
    bars = []
    for k, (name, values) in enumerate(series):
        for i, value in enumerate(values):
            h = plot_h * value / scale_top
            bars.append(
                {
                    "x": round(left + i * slot + 4 + k * bar_w, 2),
                    "y": round(top + plot_h - h, 2),
                    "width": round(max(bar_w - 1, 1), 2),
                    "height": round(h, 2),
                    "series": k,
                    "label": f"{name}, {categories[i]}: {value:.1%}",
                }
            )
    ticks = [
        {"y": round(top + plot_h - plot_h * f, 2), "text": f"{scale_top * f:.0%}"} for f in (0.0, 0.5, 1.0)
    ]
    labels = [{"x": round(left + (i + 0.5) * slot, 2), "text": c} for i, c in enumerate(categories)]
    legend = [{"x": left + 90 * k, "series": k, "name": name} for k, (name, _) in enumerate(series)]
    return {
        "width": width,
        "height": height,
        "left": left,
        "axis_y": top + plot_h,
        "right": width - right,
        "top": top,
        "label_y": top + plot_h + 16,
        "bars": bars,
        "ticks": ticks,
        "labels": labels,
        "legend": legend,
    }


def report_plots(report: dict[str, Any]) -> dict[str, Any]:
    """The geometry of the page's two plots, from the same numbers its tables list."""
    splits = [s for s in report["splits"] if s["images"]]
    if not splits:
        return {}
    top = max(len(s["classes_per_image"]) for s in splits)
    per_image = [
        (
            s["split"],
            [row["share"] for row in s["classes_per_image"]] + [0.0] * (top - len(s["classes_per_image"])),
        )
        for s in splits
    ]
    return {
        "scale": bar_chart(
            scale_bin_names(), [(s["split"], [b["share"] for b in s["scale_histogram"]]) for s in splits]
        ),
        "classes_per_image": bar_chart([str(k) for k in range(top)], per_image),
    }
