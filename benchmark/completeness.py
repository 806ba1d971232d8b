"""What an export holds and what it leaves out (issue 31): which images are written, and the counts per class
of accepted boxes not yet final and of images whose labelling is unfinished, with reasons, for the manifest and
the export page. Pure: the Django side gathers the facts (`benchmark.selectors.export_completeness`).

The rule. A detector's correct answer on an object the export does not hold scores as a false positive, so an
image is written only when what the export says about it is complete:
- an image with open labelling work (an image-verification question or fixed-majority vote undecided or in
  review, Algorithm 1 still asking, a box job drawing, verifying or in review) is left out;
- with "final labels only" (the default), an image with an accepted box that is not final yet (its overlap
  check pending, a review item about it open) is left out too; with "include provisional" such boxes are
  written and counted as provisional;
- an image with no label at all (no final label, no box) is left out: nothing about it was verified, so it is
  no background. Gold images the organizer posted are of that kind (a gold item answers one question about
  one class or box, never a full label of the image): they are left out, reason `gold`. A gold image the
  pipelines labelled themselves is written by those labels, like any other.
- an image the organizer excluded is left out, reason `excluded` alone, whatever its labels; its open work and
  boxes are not counted against its classes.
Every format (ILSVRC lists, COCO, VOC, YOLO, image folders) writes the same images, since they all read the
images the label source streams.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ImageReason(StrEnum):
    """Why an image is not written (or, for work on a class, why that class is unfinished on it)."""

    VERIFICATION_OPEN = "verification_open"  # an image-verification question not decided, or in review
    VOTE_OPEN = "vote_open"  # a fixed-majority vote still collecting answers
    LABELING_OPEN = "labeling_open"  # Algorithm 1 still asking about the image (not tied to one class)
    BOX_JOB_OPEN = "box_job_open"  # boxes still being drawn or verified
    BOX_JOB_IN_REVIEW = "box_job_in_review"  # a box job waiting for a reviewer
    BOXES_NOT_FINAL = "boxes_not_final"  # accepted boxes not final yet (final-labels export)
    GOLD = "gold"  # a gold image no pipeline labelled
    UNLABELLED = "unlabelled"  # no label at all: nothing verified
    EXCLUDED = "excluded"  # the organizer excluded the image (organize/image_exclusion.py)


class BoxReason(StrEnum):
    """Why an accepted box is not final yet."""

    OVERLAP_UNCHECKED = "overlap_unchecked"  # its overlaps with the image's other boxes not examined yet
    REVIEW_OPEN = "review_open"  # a review item about it (a duplicate or cross-class pair) is open


@dataclass(frozen=True, slots=True)
class OpenWork:
    """Labelling work not finished on an image; `concept_id` None when it concerns the whole image."""

    image_id: int
    concept_id: int | None
    reason: ImageReason


@dataclass(frozen=True, slots=True)
class ProvisionalBox:
    """An accepted box that is not final, with why."""

    box_id: int
    image_id: int
    concept_id: int
    reason: BoxReason


@dataclass
class Completeness:
    """The outcome: the images left out (with their reasons) and the per-class counts."""

    include_provisional: bool
    left_out: dict[int, tuple[str, ...]] = field(default_factory=dict)  # image id -> reasons
    split_of: dict[int, str] = field(default_factory=dict)
    boxes_not_final: dict[int, Counter[str]] = field(default_factory=dict)  # class -> reason -> boxes
    images_unfinished: dict[int, Counter[str]] = field(default_factory=dict)  # class -> reason -> images
    images_unfinished_total: dict[int, int] = field(default_factory=dict)  # class -> images (each once)
    image_wide: Counter[str] = field(default_factory=Counter)  # reasons not tied to a class -> images
    provisional_written: int = 0  # provisional boxes written (include_provisional only)

    def written(self, image_id: int) -> bool:
        return image_id not in self.left_out

    def as_dict(self, class_names: Mapping[int, str]) -> dict[str, Any]:
        """The manifest's `completeness` section; classes by name (the id when a class is not exported)."""
        by_reason: Counter[str] = Counter(r for reasons in self.left_out.values() for r in reasons)
        by_split: Counter[str] = Counter(self.split_of.get(i, "") for i in self.left_out)
        classes: dict[str, dict[str, Any]] = {}
        for concept_id in sorted(set(self.boxes_not_final) | set(self.images_unfinished)):
            boxes = self.boxes_not_final.get(concept_id, Counter())
            images = self.images_unfinished.get(concept_id, Counter())
            classes[class_names.get(concept_id, str(concept_id))] = {
                "accepted_boxes_not_final": {"total": sum(boxes.values()), **dict(sorted(boxes.items()))},
                "images_unfinished": {
                    "total": self.images_unfinished_total.get(concept_id, 0),
                    **dict(sorted(images.items())),
                },
            }
        return {
            "labels": "provisional" if self.include_provisional else "final",
            "complete": not self.left_out and not self.boxes_not_final,
            "images_left_out": {
                "total": len(self.left_out),
                "by_reason": dict(sorted(by_reason.items())),
                "by_split": dict(sorted(by_split.items())),
                "images": [
                    {"image_id": i, "split": self.split_of.get(i, ""), "reasons": list(self.left_out[i])}
                    for i in sorted(self.left_out)
                ],
            },
            "provisional_boxes_written": self.provisional_written,
            "classes": classes,
            "image_wide": dict(sorted(self.image_wide.items())),
        }


def assess(
    images: Iterable[tuple[int, str]],
    *,
    labelled: set[int],
    gold: set[int],
    open_work: Iterable[OpenWork],
    provisional: Iterable[ProvisionalBox],
    include_provisional: bool,
    excluded: frozenset[int] | set[int] = frozenset(),
) -> Completeness:
    """Apply the rule above to the images of an export ((image id, split) pairs). `labelled`: images with a
    final label or a final box; `gold`: images the dataset's gold items are about; `excluded`: images the
    organizer excluded."""
    result = Completeness(include_provisional=include_provisional)
    result.split_of = dict(images)
    # Excluded images are left out for that reason alone: the rest of the rule looks only at the others.
    split_of = {i: s for i, s in result.split_of.items() if i not in excluded}
    reasons: dict[int, set[str]] = defaultdict(set)
    per_class: dict[int, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))  # class -> image -> why
    for work in open_work:
        if work.image_id not in split_of:
            continue
        reasons[work.image_id].add(work.reason.value)
        if work.concept_id is None:
            continue
        per_class[work.concept_id][work.image_id].add(work.reason.value)
    image_wide: dict[int, set[str]] = defaultdict(set)
    for work_image, open_reasons in reasons.items():
        if ImageReason.LABELING_OPEN.value in open_reasons:
            image_wide[work_image].add(ImageReason.LABELING_OPEN.value)
    with_provisional: set[int] = set()
    for box in provisional:
        if box.image_id not in split_of:
            continue
        result.boxes_not_final.setdefault(box.concept_id, Counter())[box.reason.value] += 1
        with_provisional.add(box.image_id)
        if include_provisional:
            if box.image_id not in reasons:
                result.provisional_written += 1
        else:
            reasons[box.image_id].add(ImageReason.BOXES_NOT_FINAL.value)
            per_class[box.concept_id][box.image_id].add(ImageReason.BOXES_NOT_FINAL.value)
    for image_id in split_of:
        if image_id in reasons:
            continue
        has_labels = image_id in labelled or (include_provisional and image_id in with_provisional)
        if not has_labels:
            empty = ImageReason.GOLD if image_id in gold else ImageReason.UNLABELLED
            reasons[image_id].add(empty.value)
            image_wide[image_id].add(empty.value)
    for image_id in result.split_of.keys() & set(excluded):
        reasons[image_id] = {ImageReason.EXCLUDED.value}
        image_wide[image_id].add(ImageReason.EXCLUDED.value)
    result.left_out = {i: tuple(sorted(why)) for i, why in sorted(reasons.items())}
    for concept_id, images_why in per_class.items():
        counts: Counter[str] = Counter()
        for why in images_why.values():
            counts.update(why)
        result.images_unfinished[concept_id] = counts
        # An image unfinished for several reasons on one class is counted under each, and once in the total.
        result.images_unfinished_total[concept_id] = len(images_why)
    result.image_wide = Counter(r for why in image_wide.values() for r in why)
    return result
