"""Evaluation kit: COCO, PASCAL VOC and ILSVRC metrics, bootstrap intervals and submission readers.

Plain numpy, no framework: the ``evaluate`` management command and the evaluation endpoint wrap these.
"""

from .bootstrap import BootstrapEstimate, Interval, bootstrap
from .coco import detections_from_coco, evaluate_coco, evaluate_coco_dicts, ground_truth_from_coco
from .data import Detections, GroundTruth, ImageLabels, TopKPredictions
from .ilsvrc import detection_threshold, evaluate_ilsvrc_cls, evaluate_ilsvrc_det, evaluate_ilsvrc_loc
from .registry import DETECTION_PROTOCOLS, LABEL_PROTOCOLS, PROTOCOLS, evaluate
from .submissions import (
    Problem,
    SubmissionError,
    parse_coco_results,
    read_ilsvrc_cls,
    read_ilsvrc_det,
    read_ilsvrc_loc,
    validate_coco_results,
)
from .voc import average_precision, evaluate_voc, evaluate_voc07, evaluate_voc12
from .voc_xml import read_voc_xml

__all__ = [
    "DETECTION_PROTOCOLS",
    "LABEL_PROTOCOLS",
    "PROTOCOLS",
    "BootstrapEstimate",
    "Detections",
    "GroundTruth",
    "ImageLabels",
    "Interval",
    "Problem",
    "SubmissionError",
    "TopKPredictions",
    "average_precision",
    "bootstrap",
    "detection_threshold",
    "detections_from_coco",
    "evaluate",
    "evaluate_coco",
    "evaluate_coco_dicts",
    "evaluate_ilsvrc_cls",
    "evaluate_ilsvrc_det",
    "evaluate_ilsvrc_loc",
    "evaluate_voc",
    "evaluate_voc07",
    "evaluate_voc12",
    "ground_truth_from_coco",
    "parse_coco_results",
    "read_ilsvrc_cls",
    "read_ilsvrc_det",
    "read_ilsvrc_loc",
    "read_voc_xml",
    "validate_coco_results",
]
