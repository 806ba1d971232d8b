"""Reads for splits and exports: the final labels of a dataset, streamed in image order.

Splits and exporters read only the final-label rows (`annotation.FinalLabel` for image-level presence and
verified absence, `annotation.FinalBox` for boxes through the review gate). Which pipeline's verdict a row
carries is decided when it is written (`annotation.final_labels`), never here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

from django.core.files.storage import default_storage
from django.db.models import QuerySet

from annotation.models import BoxJob, Dataset, FinalBox, FinalLabel, Image, Task, TaskState
from annotation.vote_tasks import KIND as BINARY_VOTE
from consensus.models import Question, QuestionKind
from hierarchy.models import Concept, ConceptEdge, QuestionNode

from .exporters.base import SPLIT_NAMES, ExportBox, ExportCategory, ExportImage, ExportLabel
from .models import ImageSplit, SplitVersion

CHUNK = 10_000  # rows per server-side cursor fetch: memory stays flat whatever the dataset size


@dataclass(frozen=True, slots=True)
class ImageLabel:
    """A final image-level label with the evidence behind it."""

    image_id: int
    concept_id: int
    positive: bool
    pipeline: str  # the deciding pipeline: "box", "consensus", "multilabel" or "binary_vote"
    boxes: int = 0
    yes: int = 0
    no: int = 0
    probability: float | None = None  # consensus posterior, when a calibrated decision exists


def image_labels(dataset: Dataset, images: QuerySet | None = None) -> Iterator[ImageLabel]:
    """The dataset's final image-level labels, present and verified absent, ordered by (image id, concept id).
    A pair with no row is unknown (never asked, or still undecided)."""
    qs = FinalLabel.objects.filter(dataset=dataset)
    if images is not None:
        qs = qs.filter(image_id__in=images)
    rows = qs.order_by("image_id", "concept_id").values_list(
        "image_id", "concept_id", "present", "source", "box_count", "yes_count", "no_count", "probability"
    )
    for row in rows.iterator(chunk_size=CHUNK):
        yield ImageLabel(*row)


def dataset_class_ids(dataset: Dataset) -> set[int]:
    """Every class the dataset labels, whether or not any image has it: the concepts of its final labels and
    boxes, of its image-verification questions and fixed-majority votes (decided or not), of its box jobs, and
    the leaves of every hierarchy it runs multi-label annotation with."""
    ids = set(FinalLabel.objects.filter(dataset=dataset).values_list("concept_id", flat=True).distinct())
    ids |= set(FinalBox.objects.filter(dataset=dataset).values_list("concept_id", flat=True).distinct())
    ids |= set(
        Question.objects.filter(dataset=dataset, kind=QuestionKind.IMAGE_VERIFY)
        .values_list("concept_id", flat=True)
        .distinct()
    )
    ids |= set(
        Task.objects.filter(dataset=dataset, kind=BINARY_VOTE, concept__isnull=False)
        .exclude(state=TaskState.CANCELLED)
        .values_list("concept_id", flat=True)
        .distinct()
    )
    ids |= set(BoxJob.objects.filter(dataset=dataset).values_list("concept_id", flat=True).distinct())
    ids |= set(
        QuestionNode.objects.filter(leaf=True, hierarchy__labelings__dataset=dataset)
        .values_list("concept_id", flat=True)
        .distinct()
    )
    ids.discard(None)
    return ids


def dataset_categories(dataset: Dataset) -> list[ExportCategory]:
    """Every class of the dataset (whatever the split, so class ids and indices agree across splits, and even
    with no instance), with its first parent (by wnid) as COCO supercategory."""
    ids = dataset_class_ids(dataset)
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
        qs = FinalBox.objects.filter(dataset=self.dataset)
        if self.version is not None:
            qs = qs.filter(image_id__in=self._image_ids(split))
        rows = qs.order_by("image_id", "box_id").values_list(
            "box_id", "image_id", "concept_id", "x1", "y1", "x2", "y2"
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
        qs = FinalBox.objects.filter(dataset=self.dataset)
        if images is not None:
            qs = qs.filter(image_id__in=images)
        rows = qs.order_by("image_id", "box_id").values_list(
            "box_id", "image_id", "concept_id", "box__drawn_by_id"
        )
        for box_id, image_id, concept_id, drawn_by in rows.iterator(chunk_size=CHUNK):
            yield {
                "box_id": box_id,
                "image_id": image_id,
                "category_id": concept_id,
                "pipeline": "box",
                "state": "accepted",
                "drawn_by": drawn_by,
            }

    def open_image(self, image: ExportImage) -> IO[bytes]:
        name = Image.objects.filter(pk=image.id).values_list("file", flat=True).get()
        return default_storage.open(name, "rb")
