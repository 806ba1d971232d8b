"""A dataset's confusable class pairs (seal / sea otter), which its overlap scan queues at the lower confusable
threshold (`review.scan`): added and removed by the dataset's organizers, each change audited in its transaction.
A pair joins two distinct classes of the dataset and is listed once, in either order (stored canonically)."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from annotation.audit import audit_record
from annotation.models import Dataset

from .errors import ReviewError
from .models import ConfusablePair


class PairInvalid(ValueError):
    """The pair cannot be listed as asked; the API answers 400 with the message under `field`."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class PairListed(ReviewError):
    code = "confusable_pair_listed"


def dataset_pairs(dataset: Dataset):
    """The dataset's pairs by their classes' wnids, with both classes."""
    return (
        ConfusablePair.objects.filter(dataset=dataset)
        .select_related("concept_a", "concept_b")
        .order_by("concept_a__wnid", "concept_b__wnid")
    )


def confusable_pair_add(*, dataset: Dataset, a: str, b: str, note: str, actor) -> ConfusablePair:
    """List the classes `a` and `b` (wnids among the dataset's classes) as confusable in the dataset. Refused
    with `PairInvalid` for one class twice or a class the dataset does not have, with `PairListed` when the
    dataset lists the two already (the unique constraint decides, so two concurrent adds list it once)."""
    if a == b:
        raise PairInvalid("b", "a class is not confusable with itself")
    found = {c.wnid: c for c in dataset.concepts.filter(wnid__in=[a, b])}
    missing = [w for w in (a, b) if w not in found]
    if missing:
        raise PairInvalid("concepts", f"not among the classes of {dataset.name}: {', '.join(missing)}")
    try:
        with transaction.atomic():
            pair = ConfusablePair(dataset=dataset, concept_a=found[a], concept_b=found[b], note=note)
            pair.save()
            audit_record(
                dataset=dataset,
                actor=actor,
                action="confusable_pair.add",
                parameters={"a": a, "b": b, "note": note},
            )
    except IntegrityError:
        raise PairListed(f"{a} / {b} is listed already") from None
    return dataset_pairs(dataset).get(pk=pair.pk)


def confusable_pair_remove(*, dataset: Dataset, pair_id: int, actor) -> None:
    """Remove the dataset's pair `pair_id` (`ConfusablePair.DoesNotExist` when the dataset has no such pair,
    another dataset's included). The row is locked FOR UPDATE (it is deleted) before its audit entry is
    written, so two concurrent removals record one."""
    with transaction.atomic():
        pair = dataset_pairs(dataset).select_for_update(of=("self",)).get(pk=pair_id)
        audit_record(
            dataset=dataset,
            actor=actor,
            action="confusable_pair.remove",
            parameters={"a": pair.concept_a.wnid, "b": pair.concept_b.wnid, "note": pair.note},
        )
        pair.delete()
