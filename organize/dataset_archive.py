"""Archiving a dataset (the way out for one that was worked on, which `dataset_delete` keeps): it leaves the
organizer's active list for the "Archived" one, its tasks and review items are no longer handed out (the queue
and the review queue skip archived datasets), and everything it holds stays: images, answers, labels, export
jobs and their archives, its pages. Restoring puts it back as it was. Both are audited, and both are
idempotent: archiving an archived dataset changes nothing."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotation.audit import audit_record
from annotation.models import Dataset


def dataset_archive(dataset: Dataset, *, actor) -> Dataset:
    with transaction.atomic():
        locked = Dataset.objects.select_for_update(no_key=True).get(pk=dataset.pk)
        if locked.archived_at is None:
            locked.archived_at = timezone.now()
            locked.save(update_fields=["archived_at"])
            audit_record(dataset=locked, actor=actor, action="dataset.archive", parameters={})
    return locked


def dataset_restore(dataset: Dataset, *, actor) -> Dataset:
    with transaction.atomic():
        locked = Dataset.objects.select_for_update(no_key=True).get(pk=dataset.pk)
        if locked.archived_at is not None:
            locked.archived_at = None
            locked.save(update_fields=["archived_at"])
            audit_record(dataset=locked, actor=actor, action="dataset.restore", parameters={})
    return locked
