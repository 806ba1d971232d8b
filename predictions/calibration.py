"""Calibration data for a prediction set's box proposals: its proposals on the images whose box job for the
class is done (every instance boxed and verified), each marked correct when it overlaps an accepted box, and the
threshold suggested from them (`predictions.thresholds`)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from annotation.models import Box, BoxJob, BoxJobStatus, BoxState

from .models import BoxPrediction, PredictionSet
from .thresholds import Suggestion, proposals_correct, threshold_suggest


def calibration_data(prediction_set: PredictionSet, concept_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(scores, correct) of the set's proposals of the class on images whose box job is done."""
    done = BoxJob.objects.filter(
        dataset_id=prediction_set.dataset_id, concept_id=concept_id, status=BoxJobStatus.DONE
    ).values("image_id")
    proposals: dict[int, list[tuple[float, float, float, float, float]]] = defaultdict(list)
    rows = BoxPrediction.objects.filter(
        prediction_set=prediction_set, concept_id=concept_id, image_id__in=done
    )
    for image_id, *corners, score in rows.values_list("image_id", "x1", "y1", "x2", "y2", "score"):
        proposals[image_id].append((*corners, score))
    verified: dict[int, list[tuple[float, float, float, float]]] = defaultdict(list)
    boxes = Box.objects.filter(image_id__in=list(proposals), concept_id=concept_id, state=BoxState.ACCEPTED)
    for image_id, *corners in boxes.values_list("image_id", "x1", "y1", "x2", "y2"):
        verified[image_id].append(tuple(corners))
    scores: list[np.ndarray] = []
    correct: list[np.ndarray] = []
    for image_id, found in sorted(proposals.items()):
        arr = np.asarray(found, dtype=float)
        truth = np.asarray(verified[image_id], dtype=float).reshape(-1, 4)
        scores.append(arr[:, 4])
        correct.append(proposals_correct(arr[:, :4], arr[:, 4], truth))
    if not scores:
        return np.zeros(0), np.zeros(0, dtype=bool)
    return np.concatenate(scores), np.concatenate(correct)


def threshold_suggestion(prediction_set: PredictionSet, concept_id: int) -> Suggestion:
    return threshold_suggest(*calibration_data(prediction_set, concept_id))
