"""Freezing a detection benchmark out of a dataset's final labels: class statistics and selection, basic-level
merging and the annotation it still owes, verified negatives, reviewers' blacklist flags and VOC box attributes.
The rules themselves are pure (`benchmark.class_selection`); this module reads the rows and writes the results,
each write in one transaction with its audit entry.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.audit import audit_record
from annotation.models import Box, BoxState, Dataset, FinalBox, FinalLabel, Image
from boxes.services import box_job_start
from hierarchy.models import Concept

from . import class_selection as rules
from . import selectors
from .models import BlacklistEntry, BoxAttributes, DetectionSet, ImageSplit, SplitVersion
from .services import BenchmarkError

# --- reads ------------------------------------------------------------------------------------------------


def box_facts(dataset: Dataset, images: Iterable[int] | None = None) -> Iterable[rules.BoxFact]:
    qs = FinalBox.objects.filter(dataset=dataset)
    if images is not None:
        qs = qs.filter(image_id__in=images)
    rows = qs.order_by("image_id", "box_id").values_list(
        "image_id", "concept_id", "x1", "y1", "x2", "y2", "image__width", "image__height"
    )
    for row in rows.iterator(chunk_size=selectors.CHUNK):
        yield rules.BoxFact(*row)


def class_statistics(dataset: Dataset, mapping: dict[int, int] | None = None) -> list[dict[str, Any]]:
    """Per class: instances, images with an instance, mean and median object scale (box over image area),
    and the class's name and wnid; with ``mapping`` fine boxes count for the class they merge into."""
    facts = box_facts(dataset)
    class_ids: Iterable[int] = selectors.dataset_class_ids(dataset)
    if mapping is not None:
        facts = (
            rules.BoxFact(
                f.image_id, mapping[f.concept_id], f.x1, f.y1, f.x2, f.y2, f.image_width, f.image_height
            )
            for f in facts
            if f.concept_id in mapping
        )
        class_ids = set(mapping.values())
    stats = rules.class_statistics(facts, class_ids)
    names = dict(Concept.objects.filter(pk__in=list(stats)).values_list("id", "name"))
    wnids = dict(Concept.objects.filter(pk__in=list(stats)).values_list("id", "wnid"))
    return [
        {**s.as_dict(), "name": names.get(cid, ""), "wnid": wnids.get(cid, "")} for cid, s in stats.items()
    ]


def concepts_by_wnid(wnids: Sequence[str]) -> list[int]:
    """Concept ids of ``wnids`` in order; unknown wnids are refused by name."""
    found = dict(Concept.objects.filter(wnid__in=wnids).values_list("wnid", "id"))
    missing = [w for w in wnids if w not in found]
    if missing:
        raise BenchmarkError(f"unknown classes (no concept with these wnids): {', '.join(missing)}")
    return [found[w] for w in wnids]


def merge_todo(detection_set: DetectionSet) -> list[rules.MergeTodo]:
    """The (image, merged class) pairs still owing boxes after the set's merge (``class_selection.merge_todo``)."""
    mapping = detection_set.mapping()
    merged_only = {f: b for f, b in mapping.items() if any(f2 != b and b2 == b for f2, b2 in mapping.items())}
    if not merged_only:
        return []
    boxed: dict[int, set[int]] = defaultdict(set)
    verdicts: dict[int, dict[int, bool]] = defaultdict(dict)
    rows = FinalLabel.objects.filter(
        dataset=detection_set.dataset, concept_id__in=list(merged_only)
    ).values_list("image_id", "concept_id", "present", "box_count")
    for image_id, concept_id, present, box_count in rows.iterator(chunk_size=selectors.CHUNK):
        verdicts[image_id][concept_id] = present
        if box_count:
            boxed[image_id].add(concept_id)
    return rules.merge_todo(merged_only, boxed, verdicts)


def negative_report(detection_set: DetectionSet, images: Iterable[int] | None = None) -> rules.NegativeReport:
    """Verified negatives of the set's classes; a negative image is re-verified: absent for every class."""
    qs = None if images is None else Image.objects.filter(pk__in=list(images)).values("id")
    verdicts = selectors.merged_image_verdicts(detection_set.dataset, detection_set.mapping(), qs)
    return rules.negatives(verdicts, [int(c) for c in detection_set.classes])


def _names(ids: Iterable[int]) -> dict[int, str]:
    return dict(Concept.objects.filter(pk__in=list(ids)).values_list("id", "name"))


# --- class selection -------------------------------------------------------------------------------------


def detection_set_create(
    *,
    dataset: Dataset,
    user,
    name: str,
    wnids: Sequence[str],
    merge: bool = False,
    max_area_share: float | None = rules.DEFAULT_MAX_AREA_SHARE,
    min_instances: int = 0,
) -> DetectionSet:
    """Apply the selection rules to the named classes and store the set (replacing an unfrozen set of that
    name). With ``merge`` every dataset class below a named class is exported as it (basic-level merging)."""
    if not name:
        raise BenchmarkError("a detection set needs a name")
    if not wnids:
        raise BenchmarkError("name at least one class")
    candidates = concepts_by_wnid(wnids)
    parents = selectors.concept_parents()
    dataset_classes = selectors.dataset_class_ids(dataset)
    names = _names(set(candidates) | dataset_classes)
    try:
        conflicts = rules.ancestor_conflicts(candidates, parents)
        if conflicts:  # refused before anything else, naming both classes
            rules.select_classes(candidates, {}, parents, names)
        mapping = (
            rules.basic_level_map(candidates, dataset_classes, parents)
            if merge
            else {c: c for c in candidates}
        )
        stats_rows = class_statistics(dataset, mapping)
        stats = {
            row["concept_id"]: rules.ClassStats(
                row["concept_id"],
                row["instances"],
                row["images"],
                row["mean_area_share"],
                row["median_area_share"],
            )
            for row in stats_rows
        }
        selection = rules.select_classes(
            candidates, stats, parents, names, max_area_share=max_area_share, min_instances=min_instances
        )
    except rules.ClassSelectionError as exc:
        raise BenchmarkError(str(exc)) from None
    kept = set(selection.kept)
    merges = {str(f): b for f, b in sorted(mapping.items()) if f != b and b in kept}
    report = {
        "statistics": [row for row in stats_rows if row["concept_id"] in set(candidates)],
        "dropped": [
            {"concept_id": cid, "name": names.get(cid, ""), "reason": why}
            for cid, why in selection.dropped.items()
        ],
        "merged": [
            {"fine": int(f), "fine_name": names.get(int(f), ""), "into": b, "into_name": names.get(b, "")}
            for f, b in merges.items()
        ],
    }
    with transaction.atomic():
        existing = (
            DetectionSet.objects.select_for_update(no_key=True).filter(dataset=dataset, name=name).first()
        )
        if existing is not None and existing.frozen:
            raise BenchmarkError(f"detection set {name!r} is frozen; choose another name")
        fields = {
            "classes": sorted(kept),
            "merges": merges,
            "max_area_share": max_area_share,
            "min_instances": min_instances,
            "report": report,
            "created_by": user,
        }
        if existing is None:
            detection_set = DetectionSet.objects.create(dataset=dataset, name=name, **fields)
        else:
            for key, value in fields.items():
                setattr(existing, key, value)
            existing.save()
            detection_set = existing
        detection_set.report["merge_todo"] = len(merge_todo(detection_set))
        detection_set.report["negatives"] = _negatives_dict(negative_report(detection_set))
        detection_set.save(update_fields=["report"])
        if user is not None:
            audit_record(
                dataset=dataset,
                actor=user,
                action="detection_set.create",
                parameters={
                    "name": name,
                    "classes": list(wnids),
                    "merge": merge,
                    "max_area_share": max_area_share,
                    "min_instances": min_instances,
                },
                result={"kept": len(kept), "dropped": len(selection.dropped), "merged": len(merges)},
            )
    return detection_set


def _negatives_dict(report: rules.NegativeReport) -> dict[str, Any]:
    return {
        "negative_images": len(report.negative_images),
        "per_class": {str(c): n for c, n in report.per_class.items()},
        "to_reverify": len(report.undecided),
    }


def merge_todo_jobs(*, detection_set: DetectionSet, user) -> dict[str, int]:
    """Start a box job of the merged class for every pair the merge left owing (each job in its own
    transaction; an existing job is kept: box_job_start is idempotent)."""
    todo = merge_todo(detection_set)
    images = Image.objects.in_bulk([t.image_id for t in todo])
    concepts = Concept.objects.in_bulk([t.basic_id for t in todo])
    created = 0
    for item in todo:
        created += box_job_start(image=images[item.image_id], concept=concepts[item.basic_id])[1]
    if user is not None:
        audit_record(
            dataset=detection_set.dataset,
            actor=user,
            action="detection_set.todo_jobs",
            parameters={"name": detection_set.name},
            result={"owed": len(todo), "created": created},
        )
    return {"owed": len(todo), "created": created, "existing": len(todo) - created}


def detection_set_freeze(
    *, detection_set: DetectionSet, user, version: SplitVersion | None = None
) -> DetectionSet:
    """Freeze the set on a frozen split version (default: the latest frozen one), snapshotting the blacklist,
    the box attributes and the negatives per split, so the benchmark no longer moves with later flags."""
    dataset = detection_set.dataset
    version = version or selectors.split_version_latest(dataset, frozen_only=True)
    if version is None or not version.frozen:
        raise BenchmarkError(
            f"dataset {dataset.name} has no frozen split version: make and freeze splits first"
        )
    with transaction.atomic():
        locked = DetectionSet.objects.select_for_update(no_key=True).get(pk=detection_set.pk)
        if locked.frozen:
            return locked
        negatives: dict[str, Any] = {}
        for split in ("train", "val", "test"):
            ids = list(
                ImageSplit.objects.filter(version=version, split=split).values_list("image_id", flat=True)
            )
            if ids:
                report = negative_report(locked, ids)
                negatives[split] = {**_negatives_dict(report), "images": list(report.negative_images)}
        box_ids = set(FinalBox.objects.filter(dataset=dataset).values_list("box_id", flat=True))
        attributes = {str(k): v for k, v in selectors.box_attributes_current(dataset).items() if k in box_ids}
        locked.snapshot = {
            "blacklist": [list(pair) for pair in selectors.blacklist_active(dataset)],
            "box_attributes": attributes,
            "negatives": negatives,
        }
        locked.split_version = version
        locked.frozen = True
        locked.frozen_at = timezone.now()
        locked.save()
        if user is not None:  # commands run without an account; the API always has one
            audit_record(
                dataset=dataset,
                actor=user,
                action="detection_set.freeze",
                parameters={"name": locked.name, "split_version": version.number},
                result={
                    "classes": len(locked.classes),
                    "blacklisted": len(locked.snapshot["blacklist"]),
                    "attributed_boxes": len(attributes),
                },
            )
    return locked


# --- reviewers: blacklist and box attributes -----------------------------------------------------------------


def blacklist_flag(
    *, dataset: Dataset, image_id: int, wnid: str | None, reason: str, user
) -> tuple[BlacklistEntry, bool]:
    """Flag an image (for one class, or every class without ``wnid``) as too ambiguous to localize.
    Idempotent: flagging again returns the active entry and False."""
    image = Image.objects.filter(dataset=dataset, pk=image_id).first()
    if image is None:
        raise BenchmarkError(f"image {image_id} is not in dataset {dataset.name}")
    concept_id = concepts_by_wnid([wnid])[0] if wnid else None
    with transaction.atomic():
        try:
            with transaction.atomic():
                entry = BlacklistEntry.objects.create(
                    dataset=dataset, image=image, concept_id=concept_id, reason=reason, flagged_by=user
                )
        except IntegrityError:
            return (
                BlacklistEntry.objects.get(image=image, concept_id=concept_id, lifted_at__isnull=True),
                False,
            )
        audit_record(
            dataset=dataset,
            actor=user,
            action="blacklist.flag",
            parameters={"image": image_id, "class": wnid or "every class", "reason": reason},
            result={"entry": entry.pk},
        )
    return entry, True


def blacklist_lift(*, dataset: Dataset, image_id: int, wnid: str | None, user) -> BlacklistEntry:
    """Lift the active flag of an image (for one class, or the whole-image flag without ``wnid``): the entry
    stays, marked lifted, and the audit trail records who lifted it."""
    concept_id = concepts_by_wnid([wnid])[0] if wnid else None
    with transaction.atomic():
        entry = (
            BlacklistEntry.objects.select_for_update(no_key=True)
            .filter(dataset=dataset, image_id=image_id, concept_id=concept_id, lifted_at__isnull=True)
            .first()
        )
        if entry is None:
            raise BenchmarkError(f"image {image_id} has no active blacklist flag for {wnid or 'every class'}")
        entry.lifted_at = timezone.now()
        entry.save(update_fields=["lifted_at"])
        audit_record(
            dataset=dataset,
            actor=user,
            action="blacklist.lift",
            parameters={"image": image_id, "class": wnid or "every class"},
            result={"entry": entry.pk},
        )
    return entry


def box_attributes_set(*, dataset: Dataset, box_id: int, user, **attributes: Any) -> BoxAttributes:
    """Record a box's VOC attributes (a new row: the latest row is current). Only accepted boxes of the
    dataset; attributes not given keep their current value."""
    box = Box.objects.filter(pk=box_id, image__dataset=dataset).first()
    if box is None:
        raise BenchmarkError(f"box {box_id} is not in dataset {dataset.name}")
    if box.state != BoxState.ACCEPTED:
        raise BenchmarkError(f"box {box_id} is {box.state}: only accepted boxes carry attributes")
    with transaction.atomic():
        current = BoxAttributes.objects.select_for_update(no_key=True).filter(box=box).order_by("-id").first()
        values = {
            "difficult": current.difficult if current else False,
            "truncated": current.truncated if current else None,
            "occluded": current.occluded if current else False,
            "viewpoint": current.viewpoint if current else "unspecified",
        }
        before = dict(values)
        values.update(attributes)
        row = BoxAttributes.objects.create(box=box, set_by=user, **values)
        audit_record(
            dataset=dataset,
            actor=user,
            action="box.attributes",
            parameters={"box": box_id, **attributes},
            result={"before": before, "after": values},
        )
    return row
