"""Deleting a dataset nobody has worked on (the simulator and first tries leave empty or mistaken datasets in an
organizer's list, and there was no way out).

A dataset whose images were ever handed to a worker (any task, gold included) keeps its answers, labels and
audit trail: it cannot be deleted. Otherwise its setup goes with it: images (and their stored files, removed
after the commit), the class choice, settings, tallies, audit entries and invitations nobody accepted. What
else still points at it (a frozen split, an accepted invitation, a worker's grant to it, an open invitation to
another dataset that names it in its scope, candidate pools) stops the deletion, named.

One image goes the same way: deleted (with its stored file) while nobody was given a task about it and no box
is drawn on it; otherwise it is kept, with its answers and labels, and the refusal says why."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import ProtectedError

from annotation import counters
from annotation.audit import audit_record
from annotation.models import AuditEntry, Box, Dataset, Image, Task
from crowd.models import Invitation

log = logging.getLogger(__name__)


class DatasetInUse(Exception):
    """The dataset has work or rows that must be kept; the message says which."""


class ImageInUse(Exception):
    """The image has work or rows that must be kept; the message says which."""


def dataset_delete(dataset: Dataset) -> int:
    """Delete `dataset` and its setup; returns the number of images deleted. Raises DatasetInUse."""
    if Task.objects.filter(dataset=dataset).exists():
        raise DatasetInUse(
            "workers have been given tasks of this dataset: its answers, labels and audit trail are kept "
            "(nothing was deleted)"
        )
    try:
        with transaction.atomic():
            locked = Dataset.objects.select_for_update().get(pk=dataset.pk)
            files = [(image.file.storage, image.file.name) for image in locked.images.all()]
            if (
                Invitation.datasets.through.objects.filter(dataset=locked)
                .exclude(invitation__dataset=locked)
                .exists()
            ):
                # Losing it would widen that invitation: one that names no dataset makes an unscoped worker.
                raise DatasetInUse(
                    "an invitation to another dataset names it among the datasets its worker may work on "
                    "(nothing was deleted)"
                )
            AuditEntry.objects.filter(dataset=locked).delete()
            Invitation.objects.filter(dataset=locked, accepted_at__isnull=True).delete()
            locked.concepts.clear()
            count, _ = locked.images.all().delete()
            locked.delete()
            transaction.on_commit(lambda: _remove_files(files))
    except ProtectedError as exc:
        kept = sorted({str(obj._meta.verbose_name_plural) for obj in exc.protected_objects})
        raise DatasetInUse(f"still used by {', '.join(kept)} (nothing was deleted)") from None
    return len(files)


def image_delete(image: Image, *, actor) -> None:
    """Delete `image`, which nobody has worked on, and its stored file (after the commit). Raises ImageInUse."""
    if Task.objects.filter(image=image).exists() or Box.objects.filter(image=image).exists():
        raise ImageInUse(
            "workers have been given tasks about this image: its answers and labels are kept (nothing was deleted)"
        )
    try:
        with transaction.atomic():
            locked = Image.objects.select_for_update().get(pk=image.pk)
            files = [(locked.file.storage, locked.file.name)]
            dataset = locked.dataset
            name = locked.original_name
            locked.delete()
            counters.images_counted(dataset.pk, -1)
            audit_record(
                dataset=dataset,
                actor=actor,
                action="image.delete",
                parameters={"image": image.pk, "name": name},
            )
            transaction.on_commit(lambda: _remove_files(files))
    except ProtectedError as exc:
        kept = sorted({obj._meta.verbose_name_plural for obj in exc.protected_objects})
        raise ImageInUse(f"still used by {', '.join(kept)} (nothing was deleted)") from None


def _remove_files(files) -> None:
    for storage, name in files:
        try:
            storage.delete(name)
        except Exception:  # noqa: BLE001 - a file left behind wastes space, it breaks nothing
            log.warning("could not remove %s after deleting its dataset", name, exc_info=True)
