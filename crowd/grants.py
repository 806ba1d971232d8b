"""Changing which datasets an accepted worker may work on (their `DatasetGrant` rows) after the invitation: an
organizer adds or removes the datasets they organize; grants of other organizers' datasets are never touched.

A change is effective at the worker's next lease: the grant check is part of the lease statement
(`annotation.queue.statements.eligible_where`). A lease the worker already holds on a dataset taken out of
their scope is left to finish: it was taken while the dataset was theirs, it is bounded by the lease time, and
its answer is as good as any other (refusing it at submit would throw away finished work and surprise the
worker). To stop a worker at once, block them (`gold.services.worker_block_set` ends their leases)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from annotation.audit import audit_record
from annotation.models import DatasetGrant
from annotation.scoping import organizer_datasets

from .models import Invitation, InvitationRole, Worker


class ScopeRefused(ValueError):
    """The change would leave the worker with no grant at all, which makes them unscoped (every dataset)."""


class NotYourWorker(LookupError):
    """The worker accepted none of the organizer's invitations and holds none of their datasets."""


@dataclass(frozen=True)
class ScopeChange:
    added: list[int]
    removed: list[int]


def worker_is_organizers(worker: Worker, organizer) -> bool:
    """Whether `organizer` may change the worker's scope: the worker accepted a worker invitation to one of the
    organizer's datasets, or holds a grant of one."""
    mine = organizer_datasets(organizer)
    return (
        Invitation.objects.filter(
            accepted_by=worker.user_id, role=InvitationRole.WORKER, dataset__in=mine
        ).exists()
        or DatasetGrant.objects.filter(worker=worker, dataset__in=mine).exists()
    )


def worker_scope_set(*, worker: Worker, organizer, datasets, audit_dataset) -> ScopeChange:
    """Make `datasets` (each one `organizer` organizes: the caller checks) the organizer's part of the worker's
    scope: grants of the organizer's datasets not named are removed, named ones added. Refused when the worker
    would hold no grant at all afterwards (ScopeRefused), since a worker without grants takes tasks of every
    dataset. The worker row is locked, so two concurrent changes cannot both remove a last grant."""
    wanted = {d.pk for d in datasets}
    with transaction.atomic():
        Worker.objects.select_for_update(no_key=True).filter(pk=worker.pk).first()
        if not worker_is_organizers(worker, organizer):
            raise NotYourWorker("this worker accepted none of your invitations")
        held = set(DatasetGrant.objects.filter(worker=worker).values_list("dataset_id", flat=True))
        mine = set(organizer_datasets(organizer).filter(pk__in=held | wanted).values_list("pk", flat=True))
        removed = sorted((held & mine) - wanted)
        added = sorted(wanted - held)
        if held and not (held - set(removed)) and not added:
            raise ScopeRefused(
                "a scoped worker keeps at least one dataset: without any they would take tasks of every "
                "dataset on the server; block them to stop their work"
            )
        if not held and not wanted:
            return ScopeChange(added=[], removed=[])  # unscoped, and stays so
        DatasetGrant.objects.filter(worker=worker, dataset_id__in=removed).delete()
        DatasetGrant.objects.bulk_create(DatasetGrant(worker=worker, dataset_id=pk) for pk in added)
        audit_record(
            dataset=audit_dataset,
            actor=organizer,
            action="worker.scope",
            parameters={"worker": worker.pk, "datasets": sorted(wanted)},
            result={"added": added, "removed": removed},
        )
    return ScopeChange(added=added, removed=removed)
