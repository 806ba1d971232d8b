"""Full multi-label annotation of a dataset's images by hierarchical yes/no questions (ILSVRC §3.3.3,
Algorithm 1): start labeling, take each decided answer, ask the next question, store the final leaf labels and
start the box jobs of the present classes (`boxes.services.on_leaves_present`).

The algorithm itself is the pure core hierarchy/algorithm.py; this module keeps its state in the database (one
ImageLabeling row per image, locked while an answer is applied) and chooses the order per run: breadth-first,
or the correlation-aware order fitted from the dataset's finished images (multilabel/cooccurrence.py). A run
started with a prediction set instead asks each image's likeliest classes first and skips the questions its
calibrated rule allows (multilabel/scores.py), recording each skip.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation import counters
from annotation.final_evidence import MULTILABEL
from annotation.final_labels import LabelVerdict, final_labels_record
from annotation.models import Dataset, Image
from boxes import services as box_services
from hierarchy.algorithm import (
    LabelingState,
    Order,
    Source,
    breadth_first,
    leaf_labels,
    next_question,
    start,
)
from hierarchy.algorithm import answer as algorithm_answer
from hierarchy.graph import HierarchyGraph, graph_for
from hierarchy.models import Hierarchy
from predictions.models import PredictionSet

from . import asking, scores
from .cooccurrence import CooccurrenceModel, CorrelationOrder
from .model_scores import SkipDecision, advance
from .models import (
    ImageLabeling,
    LabelingAnswer,
    LabelingOrder,
    LabelingSkip,
    LabelingStatus,
    LabelSource,
    LeafLabel,
    QuestionEngine,
)

# Refit the co-occurrence model when the finished images grew by this factor (and by at least MIN_NEW): fitting
# reads every finished image's leaf labels, too slow to repeat on every answer of a large dataset.
REFIT_GROWTH = 1.2
REFIT_MIN_NEW = 5


class LabelingError(ValueError):
    """The request cannot be applied to the labeling as it stands; the message says why."""


@dataclass(frozen=True)
class StartResult:
    created: int
    already: int
    order: str
    engine: str
    prediction_set: int | None = None


# --- the order ---------------------------------------------------------------------------------------------

_models: dict[tuple[int, int], tuple[int, CooccurrenceModel]] = {}


def finished_matrix(dataset_id: int, graph: HierarchyGraph) -> np.ndarray:
    """Images x leaves (in DAG order) presence matrix of the dataset's finished labelings of this hierarchy."""
    labelings = list(
        ImageLabeling.objects.filter(
            dataset_id=dataset_id, hierarchy_id=graph.hierarchy_id, status=LabelingStatus.DONE
        )
        .order_by("id")
        .values_list("id", flat=True)
    )
    row = {pk: i for i, pk in enumerate(labelings)}
    column = {leaf: j for j, leaf in enumerate(graph.dag.leaves)}
    matrix = np.zeros((len(labelings), len(column)), dtype=bool)
    for labeling_id, concept_id in LeafLabel.objects.filter(
        labeling_id__in=labelings, present=True
    ).values_list("labeling_id", "concept_id"):
        matrix[row[labeling_id], column[graph.leaf_of_concept[concept_id]]] = True
    return matrix


def order_for(dataset_id: int, graph: HierarchyGraph, order: str) -> Order:
    """The question order of a run. The correlation-aware order needs finished images to learn from; until the
    dataset has some it is breadth-first."""
    if order == LabelingOrder.BREADTH_FIRST:
        return breadth_first
    if order != LabelingOrder.CORRELATION:
        raise LabelingError(f"unknown order {order!r}; known: {', '.join(LabelingOrder.values)}")
    key = (dataset_id, graph.hierarchy_id)
    finished = ImageLabeling.objects.filter(
        dataset_id=dataset_id, hierarchy_id=graph.hierarchy_id, status=LabelingStatus.DONE
    ).count()
    if finished == 0:
        return breadth_first
    fitted = _models.get(key)
    if fitted is None or finished >= max(fitted[0] * REFIT_GROWTH, fitted[0] + REFIT_MIN_NEW):
        model = CooccurrenceModel.fit(graph.dag, graph.dag.leaves, finished_matrix(dataset_id, graph))
        fitted = (finished, model)
        _models[key] = fitted
    return CorrelationOrder(fitted[1])


def order_cache_clear() -> None:
    _models.clear()
    scores.calibration_cache_clear()


def _next_step(
    labeling: ImageLabeling,
    graph: HierarchyGraph,
    state: LabelingState,
    guide: scores.Guide | None = None,
    leaf_scores: dict[str, float] | None = None,
) -> tuple[LabelingState, str | None]:
    """The next question of a labeling (None when done). With a prediction set, first skip what the calibrated
    rule allows and record each skip; without one, exactly the run's order. A start passes the run's guide and
    the image's scores, read once for all its images."""
    if labeling.prediction_set_id is None:
        return state, next_question(state, order_for(labeling.dataset_id, graph, labeling.order))
    if guide is None:
        guide = scores.guide_for(labeling.dataset_id, graph, labeling.prediction_set_id)
    if leaf_scores is None:
        leaf_scores = scores.leaf_scores(labeling.prediction_set_id, [labeling.image_id], graph)[
            labeling.image_id
        ]
    order, rule = guide.for_image(leaf_scores)
    state, following, skips = advance(state, order, rule)
    _skips_record(labeling, graph, skips)
    return state, following


def _skips_record(labeling: ImageLabeling, graph: HierarchyGraph, skips: Sequence[SkipDecision]) -> None:
    LabelingSkip.objects.bulk_create(
        LabelingSkip(
            labeling=labeling,
            node=graph.nodes[skip.node],
            rule=skip.rule,
            score=skip.score,
            bound=skip.bound,
            target=skip.target,
            positives=skip.positives,
            observations=skip.observations,
            calibration_images=skip.images,
        )
        for skip in skips
    )


# --- services ----------------------------------------------------------------------------------------------


def labeling_start(
    *,
    dataset: Dataset,
    hierarchy: Hierarchy,
    images: Sequence[Image] | None = None,
    order: str = LabelingOrder.BREADTH_FIRST,
    engine: str = QuestionEngine.CONSENSUS,
    priority: int = 0,
    prediction_set: PredictionSet | None = None,
) -> StartResult:
    """Start Algorithm 1 on the dataset's images (all by default) and put each image's first question to the
    crowd. Images already being labelled with this hierarchy are left as they are, so starting twice asks
    nothing twice. With a prediction set of this dataset, its class scores order each image's questions and,
    once the dataset has decided images to calibrate on, skip the unlikely ones (`order` is then unused)."""
    if order not in LabelingOrder.values:
        raise LabelingError(f"unknown order {order!r}; known: {', '.join(LabelingOrder.values)}")
    if engine not in QuestionEngine.values:
        raise LabelingError(f"unknown engine {engine!r}; known: {', '.join(QuestionEngine.values)}")
    if prediction_set is not None and prediction_set.dataset_id != dataset.pk:
        raise LabelingError(f"prediction set {prediction_set.pk} belongs to another dataset")
    graph = graph_for(hierarchy)
    if prediction_set is not None:
        return _start_scored(dataset, hierarchy, graph, images, order, engine, priority, prediction_set)
    with transaction.atomic(), counters.held():
        fresh, already = _fresh_images(dataset, hierarchy, images)
        state = start(graph.dag)
        # Before any answer every image is in the same state: one pick serves them all.
        first = next_question(state, order_for(dataset.pk, graph, order))
        assert first is not None  # a valid DAG has at least one node
        labelings = _labelings_create(
            fresh,
            dataset=dataset,
            hierarchy=hierarchy,
            order=order,
            engine=engine,
            state=state,
            pending_node=first,
        )
        asking.questions_open(graph, [(labeling, first) for labeling in labelings], priority=priority)
    return StartResult(created=len(labelings), already=len(already), order=order, engine=engine)


def _labelings_create(
    image_ids: list[int],
    *,
    dataset: Dataset,
    hierarchy: Hierarchy,
    order: str,
    engine: str,
    state: LabelingState,
    pending_node: str = "",
    prediction_set: PredictionSet | None = None,
) -> list[ImageLabeling]:
    """One labeling per image, each starting from `state` (a new run's: no decisions yet)."""
    return ImageLabeling.objects.bulk_create(
        [
            ImageLabeling(
                image_id=pk,
                hierarchy=hierarchy,
                dataset=dataset,
                order=order,
                engine=engine,
                prediction_set=prediction_set,
                state=state.to_dict(),
                pending_node=pending_node,
            )
            for pk in image_ids
        ],
        batch_size=500,
    )


def _fresh_images(
    dataset: Dataset, hierarchy: Hierarchy, images: Sequence[Image] | None
) -> tuple[list[int], set[int]]:
    """The ids of the images to start (all the dataset's by default) not yet labelled with this hierarchy, and the
    ids of those already are."""
    pool = dataset.images.all() if images is None else dataset.images.filter(pk__in=[i.pk for i in images])
    already = set(
        ImageLabeling.objects.filter(hierarchy=hierarchy, image__in=pool).values_list("image_id", flat=True)
    )
    return [pk for pk in pool.order_by("id").values_list("id", flat=True) if pk not in already], already


def _start_scored(dataset, hierarchy, graph, images, order, engine, priority, prediction_set) -> StartResult:
    """`labeling_start` with a prediction set: every image has its own first question (and perhaps skips)."""
    with transaction.atomic(), counters.held():
        fresh, already = _fresh_images(dataset, hierarchy, images)
        labelings = _labelings_create(
            fresh,
            dataset=dataset,
            hierarchy=hierarchy,
            order=order,
            engine=engine,
            state=start(graph.dag),
            prediction_set=prediction_set,
        )
        guide = scores.guide_for(dataset.pk, graph, prediction_set.pk)
        by_image = scores.leaf_scores(prediction_set.pk, fresh, graph)
        asks = []
        for labeling in labelings:
            state, first = _next_step(labeling, graph, start(graph.dag), guide, by_image[labeling.image_id])
            labeling.state = state.to_dict()
            if first is None:  # every question skipped
                _done(labeling, graph, state)
                continue
            labeling.pending_node = first
            labeling.save(update_fields=["state", "pending_node"])
            asks.append((labeling, first))
        asking.questions_open(graph, asks, priority=priority)
    return StartResult(
        created=len(labelings),
        already=len(already),
        order=order,
        engine=engine,
        prediction_set=prediction_set.pk,
    )


def labeling_answer(
    *,
    labeling_id: int,
    node_id: str,
    present: bool,
    yes_votes: int = 0,
    no_votes: int = 0,
    task=None,
    only_if_pending: bool = False,
) -> ImageLabeling:
    """Apply the decided answer to question `node_id` of one image, then ask the next question or, when every
    node is decided, store the leaf labels and start the present classes' box jobs (boxes.services).

    Called by the question engine when it decides a question, inside its transaction. A repeated call for a
    node already decided changes nothing. A node that is not pending is refused (LabelingError), unless
    `only_if_pending`: the engine's event read the labeling before taking its lock, and a concurrent answer
    moved it on meanwhile; the verdict is then left for the labeling to reuse when it asks that node."""
    with transaction.atomic(), counters.held():
        labeling = ImageLabeling.objects.select_for_update(no_key=True).get(pk=labeling_id)
        graph = graph_for(labeling.hierarchy_id, labeling.state.get("dag"))
        state = LabelingState.from_dict(labeling.state, graph.dag)
        if node_id in state.decisions:
            return labeling
        if node_id != labeling.pending_node:
            if only_if_pending:
                return labeling
            raise LabelingError(
                f"question {node_id!r} was not asked for image {labeling.image_id} "
                f"(pending: {labeling.pending_node or 'none'})"
            )
        state = algorithm_answer(state, node_id, present)
        LabelingAnswer.objects.create(
            labeling=labeling,
            node=graph.nodes[node_id],
            present=present,
            yes_votes=yes_votes,
            no_votes=no_votes,
            task=task,
        )
        labeling.questions_asked += 1
        state, following = _next_step(labeling, graph, state)
        labeling.state = state.to_dict()
        if following is None:
            _done(labeling, graph, state)
        else:
            labeling.pending_node = following
            labeling.save(update_fields=["state", "questions_asked", "pending_node"])
            asking.questions_open(graph, [(labeling, following)])
        return labeling


def _done(labeling: ImageLabeling, graph: HierarchyGraph, state: LabelingState) -> None:
    labeling.pending_node = ""
    labeling.status = LabelingStatus.DONE
    labeling.finished_at = timezone.now()
    labeling.save(update_fields=["state", "questions_asked", "pending_node", "status", "finished_at"])
    _finish(labeling, graph, state)


def labeling_rewind(
    *,
    labeling_id: int,
    node_id: str,
    present: bool | None,
    yes_votes: int = 0,
    no_votes: int = 0,
    task=None,
) -> ImageLabeling:
    """The question of `node_id`, whose answer this labeling already used, no longer stands: votes were voided
    (a worker found unreliable) and it was reopened (`present` None) or re-decided (`present`). Algorithm 1 is
    rewound to that question: its answer and every answer after it are dropped, a finished image is running
    again and its leaf labels and multi-label verdicts are withdrawn, and the question is pending again; a
    re-decided question is answered at once. The questions dropped after it keep their decisions and answer at
    once when asked again. Nothing happens when the labeling never used the node or already holds `present`.

    Called by the question engine inside its transaction, like `labeling_answer`."""
    with transaction.atomic(), counters.held():
        labeling = ImageLabeling.objects.select_for_update(no_key=True).get(pk=labeling_id)
        asked = [(str(item["node"]), bool(item["present"])) for item in labeling.state.get("answers", [])]
        index = next((i for i, (node, _) in enumerate(asked) if node == node_id), None)
        if index is None or asked[index][1] == present:
            return labeling
        graph = graph_for(labeling.hierarchy_id, labeling.state.get("dag"))
        state = LabelingState.from_dict(labeling.state, graph.dag).truncated(index)
        LabelingAnswer.objects.filter(
            labeling=labeling, node__node_id__in=[node for node, _ in asked[index:]]
        ).delete()
        # Skips after the rewound question go with it: the labeling decides them again from there on.
        LabelingSkip.objects.filter(labeling=labeling).exclude(
            node__node_id__in=[node for node, _ in state.skipped]
        ).delete()
        if labeling.status == LabelingStatus.DONE:
            _withdraw(labeling, graph)
        labeling.state = state.to_dict()
        labeling.questions_asked = index
        labeling.pending_node = node_id
        labeling.status = LabelingStatus.RUNNING
        labeling.finished_at = None
        labeling.save(update_fields=["state", "questions_asked", "pending_node", "status", "finished_at"])
        if present is None:
            return labeling  # the reopened question's next decision answers it (multilabel/asking.py)
        return labeling_answer(
            labeling_id=labeling.pk,
            node_id=node_id,
            present=present,
            yes_votes=yes_votes,
            no_votes=no_votes,
            task=task,
        )


def _withdraw(labeling: ImageLabeling, graph: HierarchyGraph) -> None:
    """Take back what a finished labeling stored: its leaf labels and its multi-label verdicts. Box jobs it
    started stay; the finish after the rewind hands the present leaves to the box pipeline again (idempotently)."""
    leaves = list(labeling.leaf_labels.values_list("concept_id", flat=True))
    labeling.leaf_labels.all().delete()
    final_labels_record(
        dataset_id=labeling.dataset_id,
        source=MULTILABEL,
        verdicts=[
            LabelVerdict(image_id=labeling.image_id, concept_id=concept_id, present=None)
            for concept_id in leaves
        ],
    )


def _finish(labeling: ImageLabeling, graph: HierarchyGraph, state: LabelingState) -> None:
    labels = leaf_labels(state)
    LeafLabel.objects.bulk_create(
        LeafLabel(
            labeling=labeling,
            image_id=labeling.image_id,
            concept_id=graph.nodes[leaf].concept_id,
            present=label.present,
            source=LabelSource(label.source.value),
            via=graph.nodes[label.via] if label.via else None,
        )
        for leaf, label in labels.items()
    )
    _record_final_labels(labeling, graph, labels)
    # The present leaves flow into the box pipeline: a box job per (image, class), in this transaction.
    box_services.on_leaves_present(
        image_id=labeling.image_id,
        concept_ids=[graph.nodes[leaf].concept_id for leaf, label in labels.items() if label.present],
    )


def _record_final_labels(labeling: ImageLabeling, graph: HierarchyGraph, labels) -> None:
    """Every leaf's presence or absence, asked or propagated (a "no" above a leaf is its verified absence),
    becomes the image's multi-label verdict in the final labels, in this transaction."""
    votes = {
        node_id: (yes, no)
        for node_id, yes, no in LabelingAnswer.objects.filter(labeling=labeling).values_list(
            "node__node_id", "yes_votes", "no_votes"
        )
    }
    # A skipped "no" carries no votes; its probability is the skip's bound on P(present).
    bounds = dict(LabelingSkip.objects.filter(labeling=labeling).values_list("node__node_id", "bound"))
    model_inferred = (Source.SKIPPED, Source.NO_FROM_SKIPPED)
    final_labels_record(
        dataset_id=labeling.dataset_id,
        source=MULTILABEL,
        verdicts=[
            LabelVerdict(
                image_id=labeling.image_id,
                concept_id=graph.nodes[leaf].concept_id,
                present=label.present,
                yes=votes.get(label.via or leaf, (0, 0))[0],
                no=votes.get(label.via or leaf, (0, 0))[1],
                p=bounds.get(label.via or leaf) if label.source in model_inferred else None,
                ref={"labeling": labeling.pk, "how": label.source.value, "via": label.via or leaf},
            )
            for leaf, label in labels.items()
        ],
    )
