"""The Statistics page's plots: the report is the figures of `manage.py dataset_stats` (`benchmark.reports`,
computed in the background over the same label source as the exports, for a split version and optionally a
detection set); here is the bar geometry of its two plots, drawn server-side as SVG by the template (the page
runs no script). The test split's labels are withheld, as the command does without ``--include-test``: the
page shows its image count only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmark.reports import scale_bin_names


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
