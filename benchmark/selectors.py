"""Reads for splits and exports: the final labels of a dataset, streamed in image order.

Splits and exporters read only the final-label rows (`annotation.FinalLabel` for image-level presence and
verified absence, `annotation.FinalBox` for boxes through the review gate). Which pipeline's verdict a row
carries is decided when it is written (`annotation.final_labels`), never here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import groupby
from typing import IO, Any

from django.core.files.storage import default_storage
from django.db import connections, transaction
from django.db.models import Exists, OuterRef, QuerySet

from annotation.models import (
    Box,
    BoxJob,
    BoxJobStatus,
    BoxState,
    Dataset,
    FinalBox,
    FinalLabel,
    Image,
    Task,
    TaskState,
)
from annotation.vote_tasks import KIND as BINARY_VOTE
from consensus.models import Question, QuestionKind, QuestionState
from gold.models import GoldItem
from hierarchy.models import Concept, ConceptEdge, QuestionNode
from multilabel.models import ImageLabeling, LabelingStatus
from review.scan import unchecked_boxes
from review.selectors import open_review_box_ids

from .class_selection import ImageVerdicts, merged_verdicts
from .completeness import BoxReason, Completeness, ImageReason, OpenWork, ProvisionalBox, assess
from .exporters.base import SPLIT_NAMES, ExportBox, ExportCategory, ExportImage, ExportLabel
from .exporters.file_names import id_name
from .models import BlacklistEntry, BoxAttributes, DetectionSet, ImageSplit, SplitVersion
from .read_ahead import read_ahead

CHUNK = 10_000  # rows per server-side cursor fetch: memory stays flat whatever the dataset size
NO_ATTRIBUTES: dict[str, Any] = {}  # a box without a reviewer's attributes (most): no new dict per box


def snapshot_taken(connection) -> bool:
    """Whether `snapshot` holds one for reads on `connection`: on PostgreSQL outside a transaction. Inside one
    (a caller's atomic block) its isolation can no longer be changed, and the reads run in it as they are (at
    READ COMMITTED each statement sees its own moment)."""
    return connection.vendor == "postgresql" and not connection.in_atomic_block


def rows_streamed(rows: QuerySet) -> Iterator[Any]:
    """The rows of `rows` streamed CHUNK a fetch from a server-side cursor. On PostgreSQL the fetches after the
    first are made by a thread while the caller works on the rows in hand (`read_ahead`), on the caller's
    connection and so in its transaction (`snapshot`): the server prepares the next rows while the export
    writes these. Elsewhere (SQLite runs inside this process) one fetch after the other."""
    streamed = rows.iterator(chunk_size=CHUNK)
    if connections[rows.db].vendor != "postgresql":
        return streamed
    return read_ahead(streamed, CHUNK)


@contextmanager
def snapshot(using: str = "default") -> Iterator[bool]:
    """Every read inside sees the database at one moment: on PostgreSQL one REPEATABLE READ, READ ONLY
    transaction. An export's streams (images, boxes, labels, blacklist, its completeness, the hidden truth
    beside it) are read by separate queries; while the crowd works on, each would otherwise see a later state
    than the one before it. Its server-side cursors then stream the rows as they are fetched, where outside a
    transaction Django declares them WITH HOLD, which has PostgreSQL compute a query's whole result before the
    first row. Nothing can be written inside (a write raises); a job's progress goes through a connection of
    its own (`services`). The transaction holds back vacuum's horizon for the export's length, as pg_dump's
    does. Elsewhere (SQLite, or inside a caller's transaction) the reads run as they would without it.
    Yields whether the snapshot was taken (`snapshot_taken`)."""
    connection = connections[using]
    if not snapshot_taken(connection):
        yield False
        return
    with transaction.atomic(using=using):
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield True


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
    for row in rows_streamed(rows):
        yield ImageLabel(*row)


def dataset_class_ids(dataset: Dataset) -> set[int]:
    """Every class the dataset labels, whether or not any image has it: the concepts of its final labels and
    boxes, of its image-verification questions and fixed-majority votes (decided or not), of its box jobs, and
    the leaves of every hierarchy it runs multi-label annotation with.

    Every query clears its model's default ordering (`order_by()`): Django adds the ordering's columns to a
    SELECT DISTINCT, so FinalBox's (image, box) ordering returned every box, 3,000,000 rows and a 400 MB peak
    at a million images, instead of one row per class."""
    ids = set(
        FinalLabel.objects.filter(dataset=dataset).order_by().values_list("concept_id", flat=True).distinct()
    )
    ids |= set(
        FinalBox.objects.filter(dataset=dataset).order_by().values_list("concept_id", flat=True).distinct()
    )
    ids |= set(
        Question.objects.filter(dataset=dataset, kind=QuestionKind.IMAGE_VERIFY)
        .order_by()
        .values_list("concept_id", flat=True)
        .distinct()
    )
    ids |= set(
        Task.objects.filter(dataset=dataset, kind=BINARY_VOTE, concept__isnull=False)
        .exclude(state=TaskState.CANCELLED)
        .order_by()
        .values_list("concept_id", flat=True)
        .distinct()
    )
    ids |= set(
        BoxJob.objects.filter(dataset=dataset).order_by().values_list("concept_id", flat=True).distinct()
    )
    ids |= set(
        QuestionNode.objects.filter(leaf=True, hierarchy__labelings__dataset=dataset)
        .order_by()
        .values_list("concept_id", flat=True)
        .distinct()
    )
    ids.discard(None)
    return ids


def dataset_categories(dataset: Dataset) -> list[ExportCategory]:
    """Every class of the dataset (whatever the split, so class ids and indices agree across splits, and even
    with no instance), with its first parent (by wnid) as COCO supercategory."""
    return categories_of(dataset_class_ids(dataset))


def categories_of(concept_ids: Iterable[int]) -> list[ExportCategory]:
    """Export categories of the given concepts, each with its first parent (by wnid) as supercategory."""
    ids = set(concept_ids)
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


def merged_image_verdicts(
    dataset: Dataset, mapping: dict[int, int], images: QuerySet | None = None
) -> Iterator[ImageVerdicts]:
    """Each image's final labels lifted to a detection set's classes (``class_selection.merged_verdicts``),
    in image order; images without a final label of a mapped class are skipped."""
    for image_id, rows in groupby(
        (lab for lab in image_labels(dataset, images) if lab.concept_id in mapping),
        key=lambda lab: lab.image_id,
    ):
        labels: dict[int, bool] = {}
        boxed: list[int] = []
        for lab in rows:
            labels[lab.concept_id] = lab.positive
            if lab.boxes:
                boxed.append(lab.concept_id)
        yield merged_verdicts(image_id, labels, boxed, mapping)


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


def box_attributes_current(dataset: Dataset) -> dict[int, dict[str, Any]]:
    """Box id -> its latest attributes (difficult, truncated, occluded, viewpoint), for boxes that have any."""
    rows = (
        BoxAttributes.objects.filter(box__image__dataset=dataset)
        .order_by("box_id", "-id")
        .values_list("box_id", "difficult", "truncated", "occluded", "viewpoint")
    )
    out: dict[int, dict[str, Any]] = {}
    for box_id, difficult, truncated, occluded, viewpoint in rows.iterator(CHUNK):
        out.setdefault(
            box_id,
            {"difficult": difficult, "truncated": truncated, "occluded": occluded, "viewpoint": viewpoint},
        )
    return out


def blacklist_active(dataset: Dataset) -> list[tuple[int, int | None]]:
    """(image id, concept id or None for every class) of the flags not lifted, in image order."""
    return list(
        BlacklistEntry.objects.filter(dataset=dataset, lifted_at__isnull=True)
        .order_by("image_id", "concept_id")
        .values_list("image_id", "concept_id")
    )


def concept_parents() -> dict[int, list[int]]:
    """The is-a DAG as child -> parents (every hierarchy's edges: concepts are shared)."""
    parents: dict[int, list[int]] = {}
    for child, parent in ConceptEdge.objects.order_by("child_id", "parent_id").values_list(
        "child_id", "parent_id"
    ):
        parents.setdefault(child, []).append(parent)
    return parents


def export_completeness(
    dataset: Dataset,
    version: SplitVersion | None,
    mapping: dict[int, int] | None = None,
    include_provisional: bool = False,
) -> Completeness:
    """Which images of an export are written and what is not final yet (`benchmark.completeness` holds the
    rule), from the dataset's open work, its accepted boxes outside the review gate, its final labels and its
    gold items. With a detection set (`mapping`), only work and boxes of its classes count.

    Only the images that may be left out are read into memory (those with open work or a box not final, the
    excluded ones, and those without a final label or box, found by the database): an image outside these is
    written whatever the rule says, so the rule need not see it, and a finished million-image dataset costs
    nothing here."""

    def of_classes(qs: QuerySet) -> QuerySet:
        return qs if mapping is None else qs.filter(concept_id__in=list(mapping))

    column = "pk" if version is None else "image_id"
    has_label = of_classes(FinalLabel.objects.filter(dataset=dataset, image_id=OuterRef(column)))
    has_box = of_classes(FinalBox.objects.filter(dataset=dataset, image_id=OuterRef(column)))
    if version is None:
        unlabelled = [
            (pk, "all")
            for pk in Image.objects.filter(dataset=dataset)
            .filter(~Exists(has_label), ~Exists(has_box))
            .values_list("id", flat=True)
            .iterator(CHUNK)
        ]
    else:
        unlabelled = list(
            ImageSplit.objects.filter(version=version)
            .filter(~Exists(has_label), ~Exists(has_box))
            .values_list("image_id", "split")
            .iterator(CHUNK)
        )
    gold = set(
        GoldItem.objects.filter(dataset=dataset).order_by().values_list("image_id", flat=True).distinct()
    )
    excluded = set(
        Image.objects.filter(dataset=dataset, excluded_at__isnull=False).values_list("id", flat=True)
    )
    work: list[OpenWork] = []
    for image_id, concept_id, status in (
        of_classes(BoxJob.objects.filter(dataset=dataset))
        .exclude(status=BoxJobStatus.DONE)
        .values_list("image_id", "concept_id", "status")
    ):
        reason = ImageReason.BOX_JOB_IN_REVIEW if status == BoxJobStatus.REVIEW else ImageReason.BOX_JOB_OPEN
        work.append(OpenWork(image_id, concept_id, reason))
    undecided = (QuestionState.WAITING, QuestionState.OPEN, QuestionState.REVIEW)
    for image_id, concept_id in of_classes(
        Question.objects.filter(dataset=dataset, kind=QuestionKind.IMAGE_VERIFY, state__in=undecided)
    ).values_list("image_id", "concept_id"):
        work.append(OpenWork(image_id, concept_id, ImageReason.VERIFICATION_OPEN))
    for image_id, concept_id in (
        of_classes(Task.objects.filter(dataset=dataset, kind=BINARY_VOTE, concept__isnull=False))
        .exclude(state__in=[TaskState.DONE, TaskState.CANCELLED])
        .values_list("image_id", "concept_id")
    ):
        work.append(OpenWork(image_id, concept_id, ImageReason.VOTE_OPEN))
    for image_id in (
        ImageLabeling.objects.filter(dataset=dataset)
        .exclude(status=LabelingStatus.DONE)
        .values_list("image_id", flat=True)
    ):
        work.append(OpenWork(image_id, None, ImageReason.LABELING_OPEN))
    # Accepted boxes not final: those a review item is open about (found from the few open items), and those
    # whose overlaps were not examined (one anti-join over the dataset's boxes). One query asking both of every
    # box took 3.1 s at 3,000,000 boxes; these about 0.9 s.
    accepted = of_classes(Box.objects.filter(image__dataset=dataset, state=BoxState.ACCEPTED))
    columns = ("id", "image_id", "concept_id")
    reasons = {
        row: BoxReason.OVERLAP_UNCHECKED for row in of_classes(unchecked_boxes(dataset)).values_list(*columns)
    }
    for ids in open_review_box_ids():
        reasons |= {row: BoxReason.REVIEW_OPEN for row in accepted.filter(pk__in=ids).values_list(*columns)}
    provisional = [ProvisionalBox(*row, reason) for row, reason in sorted(reasons.items())]
    unlabelled_ids = {pk for pk, _ in unlabelled}
    others = ({w.image_id for w in work} | {b.image_id for b in provisional} | excluded) - unlabelled_ids
    return assess(
        unlabelled + _splits_of(dataset, version, sorted(others)),
        labelled=others,
        gold=gold,
        open_work=work,
        provisional=provisional,
        include_provisional=include_provisional,
        excluded=excluded,
    )


def _splits_of(dataset: Dataset, version: SplitVersion | None, ids: Sequence[int]) -> list[tuple[int, str]]:
    """(image id, split) of those of ``ids`` the export covers (in the version, or in the dataset)."""
    pairs: list[tuple[int, str]] = []
    for start in range(0, len(ids), CHUNK):
        batch = ids[start : start + CHUNK]
        if version is None:
            pairs += [
                (pk, "all")
                for pk in Image.objects.filter(dataset=dataset, pk__in=batch).values_list("id", flat=True)
            ]
        else:
            pairs += list(
                ImageSplit.objects.filter(version=version, image_id__in=batch).values_list(
                    "image_id", "split"
                )
            )
    return pairs


class DatasetSource:
    """A dataset's finalized labels as the exporters read them, split by a split version (or one pseudo
    split "all" when the dataset has none). With a detection set, only its classes are exported, fine
    classes under their merged class (the fine name kept on each box), and a frozen set's snapshot supplies
    the blacklist and box attributes. Only the images `benchmark.completeness` lets through are streamed
    (never an unfinished or unlabelled image as a background); with `include_provisional` the accepted boxes
    not final yet are written too."""

    def __init__(
        self,
        dataset: Dataset,
        version: SplitVersion | None,
        detection_set: DetectionSet | None = None,
        include_provisional: bool = False,
    ):
        self.dataset = dataset
        self.include_provisional = include_provisional
        self._completeness: Completeness | None = None
        self.version = version
        self.detection_set = detection_set
        self.dataset_name = dataset.name
        self.dataset_version = version.label if version is not None else "unsplit"
        if detection_set is not None:
            self.dataset_version += f"+{detection_set.name}"
        self._categories: list[ExportCategory] | None = None
        self._attributes: dict[int, dict[str, Any]] | None = None
        self._blacklist: list[tuple[int, int | None]] | None = None
        self._mapping = detection_set.mapping() if detection_set is not None else None

    def categories(self) -> Sequence[ExportCategory]:
        if self._categories is None:
            if self.detection_set is None:
                self._categories = dataset_categories(self.dataset)
            else:
                self._categories = categories_of(self.detection_set.classes)
        return self._categories

    def _box_attributes(self) -> dict[int, dict[str, Any]]:
        if self._attributes is None:
            if self.detection_set is not None and self.detection_set.frozen:
                snap = self.detection_set.snapshot.get("box_attributes", {})
                self._attributes = {int(k): v for k, v in snap.items()}
            else:
                self._attributes = box_attributes_current(self.dataset)
        return self._attributes

    def blacklist(self, split: str) -> Iterator[tuple[int, int]]:
        if self._blacklist is None:
            if self.detection_set is not None and self.detection_set.frozen:
                rows = self.detection_set.snapshot.get("blacklist", [])
                self._blacklist = [(int(i), None if c is None else int(c)) for i, c in rows]
            else:
                self._blacklist = blacklist_active(self.dataset)
        if not self._blacklist:
            return iter(())
        ids = None
        if self.version is not None:
            # The split's members among the flagged images only: flags are few, a split may hold millions.
            flagged = sorted({image_id for image_id, _ in self._blacklist})
            ids = {pk for pk, s in _splits_of(self.dataset, self.version, flagged) if s == split}
        every = [c.id for c in self.categories()]
        mapping = self._mapping
        pairs: set[tuple[int, int]] = set()
        left_out = self.assessment().left_out
        for image_id, concept_id in self._blacklist:
            if (ids is not None and image_id not in ids) or image_id in left_out:
                continue
            if concept_id is None:
                pairs.update((image_id, c) for c in every)
            elif mapping is None:
                pairs.add((image_id, concept_id))
            elif concept_id in mapping:
                pairs.add((image_id, mapping[concept_id]))
        return iter(sorted(pairs))

    def splits(self) -> Sequence[str]:
        if self.version is None:
            return ["all"]
        present = set(
            ImageSplit.objects.filter(version=self.version)
            .order_by()
            .values_list("split", flat=True)
            .distinct()
        )
        return [s for s in SPLIT_NAMES if s in present]

    def _image_ids(self, split: str) -> QuerySet:
        if self.version is None:
            return Image.objects.filter(dataset=self.dataset).values("id")
        return ImageSplit.objects.filter(version=self.version, split=split).values("image_id")

    def assessment(self) -> Completeness:
        if self._completeness is None:
            self._completeness = export_completeness(
                self.dataset, self.version, self._mapping, self.include_provisional
            )
        return self._completeness

    def completeness(self) -> dict[str, Any]:
        names = dict(Concept.objects.filter(pk__in=self._completeness_classes()).values_list("id", "name"))
        return self.assessment().as_dict(names)

    def _completeness_classes(self) -> set[int]:
        found = self.assessment()
        return set(found.boxes_not_final) | set(found.images_unfinished)

    def images(self, split: str) -> Iterator[ExportImage]:
        qs = Image.objects.filter(dataset=self.dataset)
        if self.version is not None:
            qs = qs.filter(id__in=self._image_ids(split))
        rows = qs.order_by("id").values_list("id", "width", "height", "file", "original_name")
        left_out = self.assessment().left_out
        for pk, width, height, name, original_name in rows_streamed(rows):
            if pk in left_out:
                continue
            extension = name.rsplit(".", 1)[-1].lower() if "." in name[-6:] else "jpg"
            yield ExportImage(pk, id_name(pk, extension), width, height, split, original_name)

    def _boxes(self) -> tuple[QuerySet, str]:
        """The boxes to write and their id column: the final boxes, or every accepted box (provisional)."""
        if self.include_provisional:
            return Box.objects.filter(image__dataset=self.dataset, state=BoxState.ACCEPTED), "id"
        return FinalBox.objects.filter(dataset=self.dataset), "box_id"

    def _provenance_column(self) -> str:
        return "provenance" if self.include_provisional else "box__provenance"

    def boxes(self, split: str) -> Iterator[ExportBox]:
        qs, box_id_column = self._boxes()
        if self.version is not None:
            qs = qs.filter(image_id__in=self._image_ids(split))
        mapping = self._mapping
        if mapping is not None:
            qs = qs.filter(concept_id__in=list(mapping))
        attributes = self._box_attributes()
        rows = qs.order_by("image_id", box_id_column).values_list(
            box_id_column,
            "image_id",
            "concept_id",
            "concept__name",
            self._provenance_column(),
            "x1",
            "y1",
            "x2",
            "y2",
        )
        left_out = self.assessment().left_out
        for box_id, image_id, concept_id, concept_name, provenance, x1, y1, x2, y2 in rows_streamed(rows):
            if image_id in left_out:
                continue
            fine = ""
            if mapping is not None and mapping[concept_id] != concept_id:
                fine, concept_id = concept_name, mapping[concept_id]
            yield ExportBox(
                box_id,
                image_id,
                concept_id,
                x1,
                y1,
                x2,
                y2,
                **attributes.get(box_id, NO_ATTRIBUTES),
                fine=fine,
                provenance=provenance,
            )

    def labels(self, split: str) -> Iterator[ExportLabel]:
        images = None if self.version is None else self._image_ids(split)
        left_out = self.assessment().left_out
        if self._mapping is None:
            for label in image_labels(self.dataset, images):
                if label.image_id not in left_out:
                    yield ExportLabel(label.image_id, label.concept_id, label.positive)
            return
        for verdicts in merged_image_verdicts(self.dataset, self._mapping, images):
            if verdicts.image_id in left_out:
                continue
            for c in sorted(verdicts.present | verdicts.absent):
                yield ExportLabel(verdicts.image_id, c, c in verdicts.present)

    def provenance(self, split: str) -> Iterator[dict[str, Any]]:
        images = None if self.version is None else self._image_ids(split)
        left_out = self.assessment().left_out
        for label in image_labels(self.dataset, images):
            if label.image_id in left_out:
                continue
            yield {
                "image_id": label.image_id,
                "category_id": label.concept_id,
                "positive": label.positive,
                "pipeline": label.pipeline,
                "boxes": label.boxes,
                "votes": {"yes": label.yes, "no": label.no},
                "probability": label.probability,
            }
        qs, box_id_column = self._boxes()
        if images is not None:
            qs = qs.filter(image_id__in=images)
        drawn_by_column = "drawn_by_id" if box_id_column == "id" else "box__drawn_by_id"
        # With provisional boxes, each line says whether its box is final (through the review gate).
        final = (
            set(FinalBox.objects.filter(dataset=self.dataset).values_list("box_id", flat=True))
            if self.include_provisional
            else None
        )
        rows = qs.order_by("image_id", box_id_column).values_list(
            box_id_column, "image_id", "concept_id", drawn_by_column
        )
        for box_id, image_id, concept_id, drawn_by in rows.iterator(chunk_size=CHUNK):
            if image_id in left_out:
                continue
            yield {
                "box_id": box_id,
                "image_id": image_id,
                "category_id": concept_id,
                "pipeline": "box",
                "state": "accepted",
                "final": final is None or box_id in final,
                "drawn_by": drawn_by,
            }

    def open_image(self, image: ExportImage) -> IO[bytes]:
        name = Image.objects.filter(pk=image.id).values_list("file", flat=True).get()
        return default_storage.open(name, "rb")
