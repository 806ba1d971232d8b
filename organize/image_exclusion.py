"""Excluding an image (and including it again): the way out for an image somebody worked on, which cannot be
deleted (`organize.dataset_delete.image_delete`).

An excluded image keeps everything done about it (answers, labels, boxes, review decisions: facts are never
removed), but while excluded: its tasks are not leased (a condition of the lease statement,
`annotation.queue.statements.eligible_where`), its open questions, Algorithm 1 labelling, box jobs and review
items are left out of the dataset's progress and its review items out of the review queue, and exports leave it
out, naming it in the manifest with the reason `excluded` (`benchmark.completeness`). Including it again undoes
all of that: its open work is leased again where it stood. A lease a worker holds on it when it is excluded
may still be answered (it ends with its lease time), as a scope change leaves held leases to finish."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotation.audit import audit_record
from annotation.models import Image


def image_exclude_set(*, image: Image, excluded: bool, reason: str, actor) -> Image:
    """Exclude (`excluded`) or include the image again, with the organizer's reason in the audit trail. Doing
    what is already done changes nothing and records nothing."""
    with transaction.atomic():
        locked = Image.objects.select_for_update(no_key=True).get(pk=image.pk)
        if (locked.excluded_at is not None) == excluded:
            return locked
        locked.excluded_at = timezone.now() if excluded else None
        locked.save(update_fields=["excluded_at"])
        audit_record(
            dataset=locked.dataset,
            actor=actor,
            action="image.exclude" if excluded else "image.include",
            parameters={"image": locked.pk, "name": locked.original_name, "reason": reason},
        )
    return locked
