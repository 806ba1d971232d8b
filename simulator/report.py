"""A Markdown report with PNG plots of a simulator summary (`simulate --report DIR`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

QUALITY_KEYS = ("precision", "recall", "box_coverage", "box_accuracy")
COST_KEYS = ("votes_per_image", "questions_per_image", "worker_seconds_per_image")


def _bar_plot(
    path: Path, title: str, values: dict[str, float], ylim: tuple[float, float] | None = None
) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on servers
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=100)
    names = list(values)
    bars = ax.bar(names, [values[n] for n in names], color="#2456d6")
    ax.bar_label(bars, fmt="%.3g")
    ax.set_title(title)
    if ylim:
        ax.set_ylim(*ylim)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_report(summary: dict[str, Any], directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    quality = {k: summary[k] for k in QUALITY_KEYS if summary.get(k) is not None}
    cost = {k: summary[k] for k in COST_KEYS if summary.get(k) is not None}
    lines = [
        f"# Simulation report: {summary.get('scenario')} (seed {summary.get('seed')})",
        "",
        "| measure | value |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in summary.items() if not isinstance(v, dict)),
        "",
    ]
    if quality:
        _bar_plot(directory / "quality.png", "Label quality against the ground truth", quality, (0, 1.05))
        lines += ["## Quality", "", "![quality](quality.png)", ""]
    if cost:
        _bar_plot(directory / "cost.png", "Cost per image", cost)
        lines += ["## Cost", "", "![cost](cost.png)", ""]
    lines += ["## Raw summary", "", "```json", json.dumps(summary, indent=2), "```", ""]
    path = directory / "report.md"
    path.write_text("\n".join(lines))
    return path


def side_by_side(summaries: dict[str, dict[str, Any]]) -> str:
    """A Markdown table of the scalar keys of several summaries (e.g. hostile and clean), one column each."""
    names = list(summaries)
    keys: list[str] = []
    for summary in summaries.values():
        keys += [k for k, v in summary.items() if k not in keys and not isinstance(v, dict | list)]
    lines = ["| measure | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for key in keys:
        lines.append(f"| {key} | " + " | ".join(str(summaries[n].get(key)) for n in names) + " |")
    return "\n".join(lines)
