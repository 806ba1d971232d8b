"""The evaluation protocols by name: adding one is adding a module and a line here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .coco import evaluate_coco
from .ilsvrc import evaluate_ilsvrc_cls, evaluate_ilsvrc_det, evaluate_ilsvrc_loc
from .voc import evaluate_voc07, evaluate_voc12

Evaluate = Callable[[Any, Any], Mapping[str, Any]]

# Detection protocols take (GroundTruth, Detections); ilsvrc-cls/-loc take (ImageLabels, TopKPredictions).
PROTOCOLS: dict[str, Evaluate] = {
    "coco": evaluate_coco,
    "voc07": evaluate_voc07,
    "voc12": evaluate_voc12,
    "ilsvrc-det": evaluate_ilsvrc_det,
    "ilsvrc-cls": evaluate_ilsvrc_cls,
    "ilsvrc-loc": evaluate_ilsvrc_loc,
}
DETECTION_PROTOCOLS = frozenset({"coco", "voc07", "voc12", "ilsvrc-det"})
LABEL_PROTOCOLS = frozenset({"ilsvrc-cls", "ilsvrc-loc"})


def evaluate(protocol: str, gt: Any, pred: Any) -> Mapping[str, Any]:
    try:
        fn = PROTOCOLS[protocol]
    except KeyError:
        raise ValueError(
            f"unknown protocol {protocol!r}; choose from {', '.join(sorted(PROTOCOLS))}"
        ) from None
    return fn(gt, pred)
