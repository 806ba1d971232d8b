"""Reads for splits and exports: the finalized labels of a dataset, streamed in image order.

``image_labels`` is the one place that decides which image-level labels are final. It merges three streams:
accepted boxes (an accepted box of a class makes the image a verified positive), image-verification
questions decided by consensus (accepted: positive with its probability; rejected: verified negative;
sent to review: not final) and finished ``binary_vote`` tasks (the fixed-majority baseline).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

from django.core.files.storage import default_storage
from django.db.models import Count, QuerySet

from annotation.binary_vote import KIND as BINARY_VOTE
from annotation.models import Box, BoxState, Dataset, Image, Task, TaskState
from consensus.models import Question, QuestionKind, QuestionState
from hierarchy.models import Concept, ConceptEdge

from .exporters.base import SPLIT_NAMES, ExportBox, ExportCategory, ExportImage, ExportLabel
from .models import ImageSplit, SplitVersion

CHUNK = 10_000  # rows per server-side cursor fetch: memory stays flat whatever the dataset size


@dataclass(frozen=True, slots=True)
class ImageLabel:
    """A final image-level label with the evidence behind it."""

    image_id: int
    concept_id: int
    positive: bool
    pipeline: str  # "box" (accepted boxes), "consensus" (image verification) or "binary_vote"
    boxes: int = 0
    yes: int = 0
    no: int = 0
    probability: float | None = None  # consensus posterior, when a calibrated decision exists


def _box_pairs(dataset: Dataset, images: QuerySet | None) -> Iterator[tuple[int, int, str, int, Any]]:
    qs = Box.objects.filter(image__dataset=dataset, state=BoxState.ACCEPTED)
    if images is not None:
        qs = qs.filter(image_id__in=images)
    rows = (
        qs.values("image_id", "concept_id")
        .annotate(n=Count("id"))
        .order_by("image_id", "concept_id")
        .values_list("image_id", "concept_id", "n")
    )
    for image_id, concept_id, n in rows.iterator(chunk_size=CHUNK):
        yield image_id, concept_id, "box", n, None


def _vote_pairs(dataset: Dataset, images: QuerySet | None) -> Iterator[tuple[int, int, str, int, Any]]:
    qs = Task.objects.filter(
        dataset=dataset, kind=BINARY_VOTE, state=TaskState.DONE, image__isnull=False, concept__isnull=False
    )
    if images is not None:
        qs = qs.filter(image_id__in=images)
    rows = qs.order_by("image_id", "concept_id", "id").values_list("image_id", "concept_id", "id", "result")
    for image_id, concept_id, task_id, result in rows.iterator(chunk_size=CHUNK):
        if isinstance(result, dict) and isinstance(result.get("answer"), bool):
            yield image_id, concept_id, "binary_vote", task_id, result


def _consensus_pairs(dataset: Dataset, images: QuerySet | None) -> Iterator[tuple[int, int, str, int, Any]]:
    qs = Question.objects.filter(
        dataset=dataset,
        kind=QuestionKind.IMAGE_VERIFY,
        state__in=(QuestionState.ACCEPTED, QuestionState.REJECTED),
        image__isnull=False,
    )
    if images is not None:
        qs = qs.filter(image_id__in=images)
    rows = qs.order_by("image_id", "concept_id", "id").values_list(
        "image_id", "concept_id", "id", "state", "yes_count", "no_count", "p"
    )
    for image_id, concept_id, question_id, state, yes, no, p in rows.iterator(chunk_size=CHUNK):
        result = {"answer": state == QuestionState.ACCEPTED, "yes": yes, "no": no, "p": p}
        yield image_id, concept_id, "consensus", question_id, result


def image_labels(dataset: Dataset, images: QuerySet | None = None) -> Iterator[ImageLabel]:
    """One label per (image, concept) with any final evidence, ordered by (image id, concept id).

    An accepted box outweighs a "no" vote (the box itself passed a quality check); among several finished
    vote tasks on one pair the latest decides, and the vote counts of all of them are reported.
    """
    streams = heapq.merge(
        _box_pairs(dataset, images),
        _consensus_pairs(dataset, images),
        _vote_pairs(dataset, images),
        key=lambda r: r[:2],
    )
    for (image_id, concept_id), group in itertools.groupby(streams, key=lambda r: (r[0], r[1])):
        boxes = yes = no = 0
        vote: bool | None = None
        consensus: bool | None = None
        probability: float | None = None
        for _, _, kind, value, result in group:
            if kind == "box":
                boxes += value
                continue
            yes += int(result.get("yes", 0))
            no += int(result.get("no", 0))
            if kind == "consensus":
                consensus, probability = result["answer"], result["p"]
            else:
                vote = result["answer"]
        if boxes:
            yield ImageLabel(image_id, concept_id, True, "box", boxes, yes, no, probability)
        elif consensus is not None:  # a calibrated decision outranks a fixed-majority vote on the same pair
            yield ImageLabel(image_id, concept_id, consensus, "consensus", 0, yes, no, probability)
        else:
            yield ImageLabel(image_id, concept_id, bool(vote), BINARY_VOTE, 0, yes, no)


def dataset_categories(dataset: Dataset) -> list[ExportCategory]:
    """Every concept with a final label in the dataset (whatever the split, so class ids and indices agree
    across splits), with its first parent (by wnid) as COCO supercategory."""
    ids = set(
        Box.objects.filter(image__dataset=dataset, state=BoxState.ACCEPTED)
        .values_list("concept_id", flat=True)
        .distinct()
    )
    ids |= set(
        Task.objects.filter(dataset=dataset, kind=BINARY_VOTE, state=TaskState.DONE, concept__isnull=False)
        .values_list("concept_id", flat=True)
        .distinct()
    )
    ids |= set(
        Question.objects.filter(
            dataset=dataset,
            kind=QuestionKind.IMAGE_VERIFY,
            state__in=(QuestionState.ACCEPTED, QuestionState.REJECTED),
        )
        .values_list("concept_id", flat=True)
        .distinct()
    )
    parents: dict[int, str] = {}
    for child_id, parent_name in (
        ConceptEdge.objects.filter(child_id__in=ids)
        .order_by("child_id", "parent__wnid")
        .values_list("child_id", "parent__name")
    ):
        parents.setdefault(child_id, parent_name)
    return [
        ExportCategory(pk, wnid, name, parents.get(pk, ""))
        for pk, wnid, name in Concept.objects.filter(pk__in=ids)
        .order_by("id")
        .values_list("id", "wnid", "name")
    ]


def split_version_latest(dataset: Dataset, frozen_only: bool = False) -> SplitVersion | None:
    qs = SplitVersion.objects.filter(dataset=dataset)
    if frozen_only:
        qs = qs.filter(frozen=True)
    return qs.order_by("-number").first()


def split_assignment(version: SplitVersion) -> dict[int, str]:
    return dict(ImageSplit.objects.filter(version=version).values_list("image_id", "split").iterator(CHUNK))


def near_duplicate_groups(dataset: Dataset) -> dict[int, int]:
    """Image id -> id of its group's root (following near_duplicate_of chains), for images in a group."""
    parent = dict(
        Image.objects.filter(dataset=dataset, near_duplicate_of__isnull=False)
        .values_list("id", "near_duplicate_of_id")
        .iterator(CHUNK)
    )

    def root(i: int) -> int:
        seen = set()
        while i in parent and i not in seen:
            seen.add(i)
            i = parent[i]
        return i

    groups = {i: root(i) for i in parent}
    for r in set(groups.values()):
        groups.setdefault(r, r)
    return groups


class DatasetSource:
    """A dataset's finalized labels as the exporters read them, split by a split version (or one pseudo
    split "all" when the dataset has none)."""

    def __init__(self, dataset: Dataset, version: SplitVersion | None):
        self.dataset = dataset
        self.version = version
        self.dataset_name = dataset.name
        self.dataset_version = version.label if version is not None else "unsplit"
        self._categories: list[ExportCategory] | None = None

    def categories(self) -> Sequence[ExportCategory]:
        if self._categories is None:
            self._categories = dataset_categories(self.dataset)
        return self._categories

    def splits(self) -> Sequence[str]:
        if self.version is None:
            return ["all"]
        present = set(
            ImageSplit.objects.filter(version=self.version).values_list("split", flat=True).distinct()
        )
        return [s for s in SPLIT_NAMES if s in present]

    def _image_ids(self, split: str) -> QuerySet:
        if self.version is None:
            return Image.objects.filter(dataset=self.dataset).values("id")
        return ImageSplit.objects.filter(version=self.version, split=split).values("image_id")

    def images(self, split: str) -> Iterator[ExportImage]:
        qs = Image.objects.filter(dataset=self.dataset)
        if self.version is not None:
            qs = qs.filter(id__in=self._image_ids(split))
        rows = qs.order_by("id").values_list("id", "width", "height", "file")
        for pk, width, height, name in rows.iterator(chunk_size=CHUNK):
            extension = name.rsplit(".", 1)[-1].lower() if "." in name[-6:] else "jpg"
            yield ExportImage(pk, f"{pk:012d}.{extension}", width, height, split)

    def boxes(self, split: str) -> Iterator[ExportBox]:
        qs = Box.objects.filter(image__dataset=self.dataset, state=BoxState.ACCEPTED)
        if self.version is not None:
            qs = qs.filter(image_id__in=self._image_ids(split))
        rows = qs.order_by("image_id", "id").values_list(
            "id", "image_id", "concept_id", "x1", "y1", "x2", "y2"
        )
        for row in rows.iterator(chunk_size=CHUNK):
            yield ExportBox(*row)

    def labels(self, split: str) -> Iterator[ExportLabel]:
        images = None if self.version is None else self._image_ids(split)
        for label in image_labels(self.dataset, images):
            yield ExportLabel(label.image_id, label.concept_id, label.positive)

    def provenance(self, split: str) -> Iterator[dict[str, Any]]:
        images = None if self.version is None else self._image_ids(split)
        for label in image_labels(self.dataset, images):
            yield {
                "image_id": label.image_id,
                "category_id": label.concept_id,
                "positive": label.positive,
                "pipeline": label.pipeline,
                "boxes": label.boxes,
                "votes": {"yes": label.yes, "no": label.no},
                "probability": label.probability,
            }
        qs = Box.objects.filter(image__dataset=self.dataset, state=BoxState.ACCEPTED)
        if images is not None:
            qs = qs.filter(image_id__in=images)
        rows = qs.order_by("image_id", "id").values_list("id", "image_id", "concept_id", "drawn_by_id")
        for box_id, image_id, concept_id, drawn_by in rows.iterator(chunk_size=CHUNK):
            yield {
                "box_id": box_id,
                "image_id": image_id,
                "category_id": concept_id,
                "pipeline": "box",
                "state": BoxState.ACCEPTED.value,
                "drawn_by": drawn_by,
            }

    def open_image(self, image: ExportImage) -> IO[bytes]:
        name = Image.objects.filter(pk=image.id).values_list("file", flat=True).get()
        return default_storage.open(name, "rb")
