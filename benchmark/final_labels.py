"""Backfill of the final labels from the pipelines' facts, for data that predates them or after a repair:
decided image-verification questions, Algorithm 1's leaf labels, finished fixed-majority votes, reviewers'
"absent" on box jobs and the boxes through the review gate. Idempotent: the rows are rebuilt from scratch in one transaction."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

from django.db import transaction

from annotation.final_evidence import BINARY_VOTE, CONSENSUS, MULTILABEL, REVIEW
from annotation.final_labels import LabelVerdict, final_labels_record
from annotation.models import BoxJob, Dataset, FinalBox, FinalLabel, Task, TaskState
from annotation.vote_tasks import KIND as BINARY_VOTE_KIND
from consensus.models import Question, QuestionKind, QuestionState
from multilabel.models import LabelingAnswer, LabelingSkip, LabelSource, LeafLabel
from review import box_jobs
from review.final_boxes import final_boxes_sync
from review.models import Decision, ReviewDecision

BATCH = 5000


@dataclass(frozen=True)
class RebuildReport:
    consensus: int
    multilabel: int
    binary_vote: int
    review: int
    boxes: int
    labels: int
    present: int
    absent: int


def _batches(verdicts: Iterator[LabelVerdict]) -> Iterator[list[LabelVerdict]]:
    while batch := list(islice(verdicts, BATCH)):
        yield batch


def _consensus(dataset: Dataset) -> Iterator[LabelVerdict]:
    rows = (
        Question.objects.filter(
            dataset=dataset,
            kind=QuestionKind.IMAGE_VERIFY,
            state__in=(QuestionState.ACCEPTED, QuestionState.REJECTED),
            image__isnull=False,
            box__isnull=True,
        )
        .order_by("id")
        .values_list("id", "image_id", "concept_id", "state", "yes_count", "no_count", "p")
    )
    for pk, image_id, concept_id, state, yes, no, p in rows.iterator(chunk_size=BATCH):
        present = state == QuestionState.ACCEPTED
        yield LabelVerdict(image_id, concept_id, present, yes, no, p, {"question": pk})


def _multilabel(dataset: Dataset) -> Iterator[LabelVerdict]:
    votes = {
        (labeling_id, node_id): (yes, no)
        for labeling_id, node_id, yes, no in LabelingAnswer.objects.filter(
            labeling__dataset=dataset
        ).values_list("labeling_id", "node__node_id", "yes_votes", "no_votes")
    }
    # A model-inferred "no" (a skip, or below one) carries the skip's bound on P(present), as when it was decided.
    skip_bounds: dict[tuple[int, str | int], float] = {}
    for labeling_id, node_id, concept_id, bound in LabelingSkip.objects.filter(
        labeling__dataset=dataset
    ).values_list("labeling_id", "node__node_id", "node__concept_id", "bound"):
        skip_bounds[(labeling_id, node_id)] = bound
        skip_bounds[(labeling_id, concept_id)] = bound
    rows = (
        LeafLabel.objects.filter(labeling__dataset=dataset)
        .order_by("id")
        .values_list("labeling_id", "image_id", "concept_id", "present", "source", "via__node_id")
    )
    for labeling_id, image_id, concept_id, present, source, via in rows.iterator(chunk_size=BATCH):
        yes, no = votes.get((labeling_id, via), (0, 0)) if via else (0, 0)
        ref = {"labeling": labeling_id, "how": source, "via": via}
        p = None
        if source == LabelSource.SKIPPED:
            p = skip_bounds.get((labeling_id, concept_id))
        elif source == LabelSource.NO_FROM_SKIPPED:
            p = skip_bounds.get((labeling_id, via))
        yield LabelVerdict(image_id, concept_id, present, yes, no, p, ref)


def _binary_votes(dataset: Dataset) -> Iterator[LabelVerdict]:
    rows = (
        Task.objects.filter(
            dataset=dataset,
            kind=BINARY_VOTE_KIND,
            state=TaskState.DONE,
            image__isnull=False,
            concept__isnull=False,
        )
        .order_by("id")
        .values_list("id", "image_id", "concept_id", "result")
    )
    for pk, image_id, concept_id, result in rows.iterator(chunk_size=BATCH):
        if isinstance(result, dict) and isinstance(result.get("answer"), bool):
            yes, no = int(result.get("yes", 0)), int(result.get("no", 0))
            yield LabelVerdict(image_id, concept_id, result["answer"], yes, no, None, {"task": pk})


def _review_absent(dataset: Dataset) -> Iterator[LabelVerdict]:
    rows = (
        ReviewDecision.objects.filter(
            item__dataset=dataset, item__subject__type=box_jobs.SUBJECT_TYPE, decision=Decision.ABSENT
        )
        .order_by("id")
        .values_list("id", "item_id", "item__subject")
    )
    decided = list(rows)
    jobs = BoxJob.objects.in_bulk([int(subject["id"]) for _, _, subject in decided])
    for pk, item_id, subject in decided:
        job = jobs.get(int(subject["id"]))
        if job is not None:
            ref = {"review_item": item_id, "review_decision": pk}
            yield LabelVerdict(job.image_id, job.concept_id, False, ref=ref)


def final_labels_rebuild(dataset: Dataset) -> RebuildReport:
    """Rebuild the dataset's final labels and boxes from the pipelines' facts."""
    counts = {}
    with transaction.atomic():
        FinalLabel.objects.filter(dataset=dataset).delete()
        FinalBox.objects.filter(dataset=dataset).delete()
        for source, verdicts in (
            (BINARY_VOTE, _binary_votes(dataset)),
            (MULTILABEL, _multilabel(dataset)),
            (CONSENSUS, _consensus(dataset)),
            (REVIEW, _review_absent(dataset)),
        ):
            counts[source] = 0
            for batch in _batches(verdicts):
                counts[source] += final_labels_record(dataset_id=dataset.pk, source=source, verdicts=batch)
        boxes = final_boxes_sync(dataset)
    labels = FinalLabel.objects.filter(dataset=dataset)
    present = labels.filter(present=True).count()
    return RebuildReport(
        consensus=counts[CONSENSUS],
        multilabel=counts[MULTILABEL],
        binary_vote=counts[BINARY_VOTE],
        review=counts[REVIEW],
        boxes=boxes,
        labels=labels.count(),
        present=present,
        absent=labels.count() - present,
    )
