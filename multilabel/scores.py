"""A prediction set's image-level class scores in Algorithm 1 (docs/hierarchy.md, "Model scores"): reads the scores
of an image, fits the skip rule's calibration from the dataset's crowd-decided images, and gives the labeling
service the order and the rule of one image. The rule itself is the pure multilabel/model_scores.py."""

from __future__ import annotations

from dataclasses import dataclass

from consensus.models import ConsensusSettings
from consensus.stopping import DEFAULT_REJECT_ERROR
from hierarchy.graph import HierarchyGraph
from predictions.models import ClassScore

from .asking import LEAF_REJECT_ERROR
from .model_scores import ScoreCalibration, ScoreOrder, SkipRule, calibration_fit, node_scores
from .models import CROWD_SOURCES, ImageLabeling, LabelingStatus, LeafLabel

# Refit when the decided images grew by this factor (and by at least MIN_NEW), as the correlation order does:
# fitting reads every decided image's scores and labels.
REFIT_GROWTH = 1.2
REFIT_MIN_NEW = 5

_calibrations: dict[tuple[int, int, int], tuple[int, ScoreCalibration]] = {}


def leaf_scores(
    prediction_set_id: int, image_ids: list[int], graph: HierarchyGraph
) -> dict[int, dict[str, float]]:
    """The set's score of every leaf of the hierarchy it scored, per image (image id -> leaf node id -> score)."""
    found: dict[int, dict[str, float]] = {image_id: {} for image_id in image_ids}
    for image_id, concept_id, score in ClassScore.objects.filter(
        prediction_set_id=prediction_set_id, image_id__in=image_ids
    ).values_list("image_id", "concept_id", "score"):
        if concept_id in graph.leaf_of_concept:
            found[image_id][graph.leaf_of_concept[concept_id]] = score
    return found


def decided_images(
    dataset_id: int, graph: HierarchyGraph, prediction_set_id: int
) -> list[tuple[dict[str, float], dict[str, bool]]]:
    """(leaf scores, crowd-decided leaf labels) of the dataset's finished labelings of this hierarchy whose image
    the set scored. Labels a skip decided are left out: the model never calibrates itself."""
    labelings = dict(
        ImageLabeling.objects.filter(
            dataset_id=dataset_id, hierarchy_id=graph.hierarchy_id, status=LabelingStatus.DONE
        ).values_list("id", "image_id")
    )
    scores: dict[int, dict[str, float]] = {}
    for image_id, concept_id, score in ClassScore.objects.filter(
        prediction_set_id=prediction_set_id, image_id__in=labelings.values()
    ).values_list("image_id", "concept_id", "score"):
        if concept_id in graph.leaf_of_concept:
            scores.setdefault(image_id, {})[graph.leaf_of_concept[concept_id]] = score
    labels: dict[int, dict[str, bool]] = {}
    for labeling_id, concept_id, present in LeafLabel.objects.filter(
        labeling_id__in=labelings, source__in=CROWD_SOURCES
    ).values_list("labeling_id", "concept_id", "present"):
        labels.setdefault(labeling_id, {})[graph.leaf_of_concept[concept_id]] = present
    return [
        (scores[image_id], labels.get(labeling_id, {}))
        for labeling_id, image_id in sorted(labelings.items())
        if image_id in scores
    ]


def calibration_for(
    dataset_id: int, graph: HierarchyGraph, prediction_set_id: int
) -> ScoreCalibration | None:
    """The skip rule's calibration from the dataset's decided images, or None before any image is decided."""
    finished = ImageLabeling.objects.filter(
        dataset_id=dataset_id, hierarchy_id=graph.hierarchy_id, status=LabelingStatus.DONE
    ).count()
    if finished == 0:
        return None
    key = (dataset_id, graph.hierarchy_id, prediction_set_id)
    fitted = _calibrations.get(key)
    if fitted is None or finished >= max(fitted[0] * REFIT_GROWTH, fitted[0] + REFIT_MIN_NEW):
        fitted = (finished, calibration_fit(graph.dag, decided_images(dataset_id, graph, prediction_set_id)))
        _calibrations[key] = fitted
    return fitted[1]


def skip_target(dataset_id: int) -> float:
    """A skip must meet the bar a crowd "no" on a leaf meets: the dataset's reject error, never looser than the
    leaves' own (multilabel/asking.py)."""
    row = (
        ConsensusSettings.objects.filter(dataset_id=dataset_id).values_list("reject_error", flat=True).first()
    )
    return min(row if row is not None else DEFAULT_REJECT_ERROR, LEAF_REJECT_ERROR)


@dataclass(frozen=True)
class Guide:
    """What guides a run's images: the calibration (None before any image is decided) and the skip target."""

    graph: HierarchyGraph
    calibration: ScoreCalibration | None
    target: float

    def for_image(self, leaf_scores: dict[str, float]) -> tuple[ScoreOrder, SkipRule | None]:
        """The score order of one image and its skip rule (None until the dataset has a decided image)."""
        by_node = node_scores(self.graph.dag, leaf_scores)
        rule = None if self.calibration is None else SkipRule(by_node, self.calibration, self.target)
        return ScoreOrder(by_node, self.calibration), rule


def guide_for(dataset_id: int, graph: HierarchyGraph, prediction_set_id: int) -> Guide:
    return Guide(graph, calibration_for(dataset_id, graph, prediction_set_id), skip_target(dataset_id))


def calibration_cache_clear() -> None:
    _calibrations.clear()
