"""A simulated in-house reviewer (ILSVRC Appendix E): decides review items from the ground truth, as a careful
person looking at the image would, with a small error rate.

Pure: takes the item as the reviewer API serves it plus the truth the simulator kept, returns a decision value
(or None when the item does not show enough to decide). No Django import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from annotation.geometry import iou_matrix
from simulator.ground_truth import ACCURACY_IOU, COVERAGE_IOU, all_instances_covered, as_boxes

# Decisions by review kind, as the reviewer API lists them. The simulated reviewer picks among these.
DUPLICATE_DECISIONS = ("distinct", "duplicate_keep_a", "duplicate_keep_b")
CROSS_CLASS_DECISIONS = ("both_right", "remove_a", "remove_b", "relabel_a", "relabel_b")


def _coords(box: Mapping) -> np.ndarray:
    return np.array([[box["x1"], box["y1"], box["x2"], box["y2"]]], dtype=np.float64)


def _best(box: Mapping, truth: np.ndarray) -> tuple[int, float]:
    """The true instance a box overlaps most, and the IoU (-1, 0.0 when there is none)."""
    t = as_boxes(truth)
    if t.shape[0] == 0:
        return -1, 0.0
    iou = iou_matrix(_coords(box), t)[0]
    best = int(np.argmax(iou))
    return best, float(iou[best])


def decide_duplicate(box_a: Mapping, box_b: Mapping, truth: np.ndarray) -> str:
    """Same class, overlapping: one instance boxed twice (keep the tighter box), or two instances."""
    ia, a = _best(box_a, truth)
    ib, b = _best(box_b, truth)
    if a >= COVERAGE_IOU and b >= COVERAGE_IOU and ia != ib:
        return "distinct"
    if a < COVERAGE_IOU and b < COVERAGE_IOU:
        return "distinct"  # neither box is of an instance; this item is not where that is settled
    return "duplicate_keep_a" if a >= b else "duplicate_keep_b"


def decide_cross_class(box_a: Mapping, box_b: Mapping, truth_by_class: Mapping[str, np.ndarray]) -> str:
    """Two classes on one spot: keep a box that fits an instance of its class, relabel one that fits the
    other class, remove one that fits neither."""
    ka, kb = box_a["concept"]["wnid"], box_b["concept"]["wnid"]
    empty = np.zeros((0, 4))
    a_ok = _best(box_a, truth_by_class.get(ka, empty))[1] >= COVERAGE_IOU
    b_ok = _best(box_b, truth_by_class.get(kb, empty))[1] >= COVERAGE_IOU
    if a_ok and b_ok:
        return "both_right"
    if not a_ok:
        return "relabel_a" if _best(box_a, truth_by_class.get(kb, empty))[1] >= COVERAGE_IOU else "remove_a"
    return "relabel_b" if _best(box_b, truth_by_class.get(ka, empty))[1] >= COVERAGE_IOU else "remove_b"


def decide_box(box: Mapping, truth: np.ndarray, others: Sequence[Mapping] = ()) -> str:
    """A box judged for quality ("tight around one whole visible X, not boxed already?"): accept it when it is
    tight around an instance of its class (ILSVRC's quality bar) that none of the other accepted boxes shown
    already covers."""
    index, iou = _best(box, truth)
    if iou < ACCURACY_IOU:
        return "reject"
    return "reject" if index in _covered(others, truth) else "accept"


def _covered(boxes: Sequence[Mapping], truth: np.ndarray) -> set[int]:
    """The true instances some of `boxes` cover (IoU >= COVERAGE_IOU)."""
    t = as_boxes(truth)
    if t.shape[0] == 0 or not boxes:
        return set()
    shown = np.array([[b["x1"], b["y1"], b["x2"], b["y2"]] for b in boxes], dtype=np.float64)
    iou = iou_matrix(shown, t)
    return {int(j) for j in np.nonzero((iou >= COVERAGE_IOU).any(axis=0))[0]}


def decide_coverage(boxes: list[Mapping], truth: np.ndarray) -> str:
    """A coverage question ("is every X in this image inside a box?") with the accepted boxes it showed:
    accept = yes, every instance is covered."""
    shown = np.array([[b["x1"], b["y1"], b["x2"], b["y2"]] for b in boxes], dtype=np.float64).reshape(-1, 4)
    return "accept" if all_instances_covered(truth, shown, COVERAGE_IOU) else "reject"


def decide_job(
    pending: Mapping | None, accepted: list[Mapping], truth: np.ndarray, choices: tuple[str, ...] = ()
) -> str:
    """A box job in review, shown with its pending box (if any) and its accepted boxes (decisions accept,
    redraw, close, and absent where offered). Absent when the image shows no such object and no box was
    accepted; accept when the pending box is right (tight around an instance not boxed yet) and with it
    every instance is covered; close when the accepted boxes already cover every instance (the pending box, if
    any, is discarded); otherwise redraw: something is still missing, the crowd draws again."""
    t = as_boxes(truth)
    if t.shape[0] == 0 and not accepted and "absent" in choices:
        return "absent"
    covered = _covered(accepted, truth)
    if len(covered) == t.shape[0]:
        return "close"
    if pending is not None and decide_box(pending, truth, accepted) == "accept":
        if len(covered | {_best(pending, truth)[0]}) == t.shape[0]:
            return "accept"
    return "redraw"


def decide_presence(present: bool) -> str:
    """An ambiguous yes/no question ("is there a X?"): accept = yes."""
    return "accept" if present else "reject"


def with_error(decision: str, choices: tuple[str, ...], rng: np.random.Generator, error_rate: float) -> str:
    """The reviewer slips with probability `error_rate`: another of the item's choices, at random."""
    others = [c for c in choices if c != decision]
    if others and rng.random() < error_rate:
        return others[int(rng.integers(len(others)))]
    return decision
