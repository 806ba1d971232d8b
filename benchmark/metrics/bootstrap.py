"""Bootstrap confidence intervals for any metric, resampling images with replacement (ILSVRC §6.2)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .data import Detections, GroundTruth, ImageLabels, TopKPredictions, resample_detection, resample_labels

DEFAULT_LEVELS = (0.95, 0.999)  # ILSVRC §6.2 reports 99.9% intervals; 95% is the everyday one


@dataclass(frozen=True)
class Interval:
    level: float
    low: float
    high: float


@dataclass(frozen=True)
class BootstrapEstimate:
    """One metric: its value on the full set and percentile intervals over the bootstrap samples."""

    name: str
    value: float
    intervals: tuple[Interval, ...]

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value}
        for iv in self.intervals:
            out[f"ci{iv.level * 100:g}"] = [iv.low, iv.high]
        return out


def _resample(gt: Any, pred: Any, sample: np.ndarray) -> tuple[Any, Any]:
    if isinstance(gt, GroundTruth) and isinstance(pred, Detections):
        return resample_detection(gt, pred, sample)
    if isinstance(gt, ImageLabels) and isinstance(pred, TopKPredictions):
        return resample_labels(gt, pred, sample)
    raise TypeError(f"cannot resample {type(gt).__name__} with {type(pred).__name__}")


def _fast_resampler(
    evaluate: Callable[[Any, Any], Mapping[str, Any]], gt: Any, pred: Any
) -> Callable[[np.ndarray], Mapping[str, Any]] | None:
    """Detection protocols match within images, so a draw only needs re-accumulating, not re-matching."""
    from .coco import coco_resampler, evaluate_coco
    from .ilsvrc import evaluate_ilsvrc_det, ilsvrc_det_resampler
    from .voc import evaluate_voc07, evaluate_voc12, voc_resampler

    if evaluate is evaluate_coco:
        return coco_resampler(gt, pred)
    if evaluate is evaluate_voc07 or evaluate is evaluate_voc12:
        return voc_resampler(gt, pred, eleven_point=evaluate is evaluate_voc07)
    if evaluate is evaluate_ilsvrc_det:
        return ilsvrc_det_resampler(gt, pred)
    return None


def _scalars(result: Mapping[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in result.items() if isinstance(v, int | float | np.floating)}


def bootstrap(
    evaluate: Callable[[Any, Any], Mapping[str, Any]],
    gt: GroundTruth | ImageLabels,
    pred: Detections | TopKPredictions,
    n_samples: int = 1000,
    seed: int = 0,
    levels: Sequence[float] = DEFAULT_LEVELS,
    exact_resampling: bool = False,
    method: str = "percentile",
) -> dict[str, BootstrapEstimate]:
    """Intervals for every scalar the protocol returns (per-class APs are left out).

    Each sample draws as many images as the set has, with replacement; a twice-drawn image counts as two
    images. The same seed gives the same intervals. The detection protocols take a shortcut that gives
    the same numbers (``exact_resampling=True`` forces evaluating every draw from scratch).

    ``method="percentile"`` (ILSVRC §6.2) takes quantiles of the draws. AP over few truths per class drifts
    upward under resampling, so its percentile interval can sit above the full-set value; ``"basic"``
    reflects the quantiles around the value (``2 v - q_high, 2 v - q_low``) to cancel that drift.
    """
    if method not in ("percentile", "basic"):
        raise ValueError(f"unknown interval method {method!r}; use 'percentile' or 'basic'")
    point = _scalars(evaluate(gt, pred))
    fast = None if exact_resampling else _fast_resampler(evaluate, gt, pred)
    images = np.unique(gt.image_ids)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {k: [] for k in point}
    for _ in range(n_samples):
        sample = images[rng.integers(0, len(images), size=len(images))]
        values = _scalars(fast(sample) if fast is not None else evaluate(*_resample(gt, pred, sample)))
        for k in draws:
            draws[k].append(values.get(k, float("nan")))
    out: dict[str, BootstrapEstimate] = {}
    for k, value in point.items():
        samples = np.asarray(draws[k])
        intervals = []
        for level in levels:
            tail = (1.0 - level) / 2.0
            if samples.size:
                low, high = np.nanquantile(samples, [tail, 1.0 - tail])
                if method == "basic":
                    low, high = 2 * value - high, 2 * value - low
            else:
                low = high = float("nan")
            intervals.append(Interval(level, float(low), float(high)))
        out[k] = BootstrapEstimate(k, value, tuple(intervals))
    return out
