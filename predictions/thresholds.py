"""Which score threshold to suggest for a class's box proposals, from calibration data: the proposals of images
whose boxes the crowd has already verified, each marked correct when it overlaps a verified box (docs/boxes.md,
"Starting from a model's proposals"). Pure: scores and booleans in, a suggestion out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from annotation.geometry import greedy_match

# A proposal counts as correct when it overlaps a verified box at IoU >= 0.7: the accuracy bar of ILSVRC §3.2.1
# (99.2% of its accepted boxes met it), the same bar the crowd's quality question holds a box to.
MATCH_IOU = 0.7
# A proposal is worth asking when it is right at least half the time. By the Su et al. 2012 timings a right
# proposal saves a draw (25.5 s median) and a coverage round (about 3 x 7.8 s), while a wrong one costs a quality
# question (about 2 x 9.0 s), so the break-even rate is about 0.27; the suggestion keeps a margin above it because
# the rates below are measured on few proposals and a worker's time on junk is not only seconds.
MIN_ACCEPT_RATE = 0.5
# Scores are read in bands of 0.1; a band says something once it holds this many checked proposals.
BAND_WIDTH = 0.1
MIN_PER_BAND = 10


@dataclass(frozen=True)
class Suggestion:
    threshold: float | None  # None: not enough calibration data
    accept_rate: float | None  # of the checked proposals scoring at or above the threshold
    checked: int  # calibration proposals (on verified images) of the class
    note: str


def proposals_correct(
    proposals: np.ndarray, scores: np.ndarray, verified: np.ndarray, iou_threshold: float = MATCH_IOU
) -> np.ndarray:
    """For one image and class: which proposals (N x 4 corners, with their scores) match a verified box one to
    one, highest score first (PASCAL VOC's detection matching)."""
    correct = np.zeros(len(proposals), dtype=bool)
    if len(proposals) == 0 or len(verified) == 0:
        return correct
    order = [int(i) for i in np.argsort(-np.asarray(scores), kind="stable")]
    for match in greedy_match(proposals, verified, iou_threshold, pred_order=order):
        correct[match.pred_index] = True
    return correct


def band_index(scores: np.ndarray, band_width: float = BAND_WIDTH) -> np.ndarray:
    """Each score's band: b holds [b * band_width, (b + 1) * band_width), the top band 1.0 too."""
    n_bands = int(round(1.0 / band_width))
    return np.minimum((np.asarray(scores, dtype=float) / band_width).astype(int), n_bands - 1)


def threshold_suggest(
    scores: Sequence[float] | np.ndarray,
    correct: Sequence[bool] | np.ndarray,
    min_rate: float = MIN_ACCEPT_RATE,
    min_per_band: int = MIN_PER_BAND,
    band_width: float = BAND_WIDTH,
) -> Suggestion:
    """The lowest score threshold (a band's lower edge) such that, in its band and every band above it that
    holds at least `min_per_band` checked proposals, at least `min_rate` of the proposals were correct. Bands
    are read from the top down and the walk stops at the first band that falls short, so a threshold never
    lets in a band of mostly wrong proposals; bands with too few proposals are passed over."""
    s = np.asarray(scores, dtype=float)
    ok = np.asarray(correct, dtype=bool)
    if s.shape != ok.shape:
        raise ValueError("scores and correct must have the same length")
    checked = int(s.size)
    if checked == 0:
        return Suggestion(
            None,
            None,
            0,
            "no calibration data: no proposal of this class lies on an image "
            "whose box job is done; start a few images, then ask again",
        )
    n_bands = int(round(1.0 / band_width))
    band = band_index(s, band_width)
    threshold = None
    for b in range(n_bands - 1, -1, -1):
        in_band = band == b
        n = int(in_band.sum())
        if n < min_per_band:
            continue
        if ok[in_band].mean() < min_rate:
            break
        threshold = round(b * band_width, 6)
    if threshold is None:
        return Suggestion(
            None,
            None,
            checked,
            f"no score band with at least {min_per_band} checked proposals was correct at a rate of "
            f"{min_rate:g} or more ({checked} checked)",
        )
    above = s >= threshold
    rate = float(ok[above].mean())
    return Suggestion(
        threshold,
        rate,
        checked,
        f"the lowest threshold whose score bands were each correct at >= {min_rate:g} "
        f"({int(above.sum())} of {checked} checked proposals score at or above it, {rate:.2f} of them correct)",
    )
