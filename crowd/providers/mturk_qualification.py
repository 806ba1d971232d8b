"""Our own MTurk qualification type per dataset and kind: made once, granted to the MTurk workers who pass
the gold app's qualification set, and required by HIT types that admit qualified workers only.

Gold announces a pass (gold.events); the subscriber here records a grant call in the outbox in the same
transaction, so the submit that qualified the worker never waits for or fails with MTurk, and a down MTurk
is retried by the outbox until it answers.
"""

from __future__ import annotations

import time

from botocore.exceptions import ClientError
from django.db import IntegrityError, transaction
from django.utils import timezone

from crowd.models import MturkHitType, MturkQualificationGrant, Worker, WorkerSource

from .mturk import call, error_code, paginate

GRANT_TASK = "crowd.mturk.qualification_grant"


def qualification_name(hit_type: MturkHitType) -> str:
    """Unique per requester account (MTurk refuses a second type of the same name), so it names the
    dataset (unique) and kind: a retried creation finds the first one by this name."""
    return f"Crowdlabel {hit_type.dataset.name} {hit_type.kind} qualified"


def _type_by_name(mturk, name: str, sleep) -> str | None:
    for found in paginate(
        mturk,
        "list_qualification_types",
        "QualificationTypes",
        sleep=sleep,
        Query=name,
        MustBeRequestable=False,
        MustBeOwnedByCaller=True,
        MaxResults=100,
    ):
        if found.get("Name") == name:
            return found["QualificationTypeId"]
    return None


def qualification_type_ensure(mturk, hit_type: MturkHitType, *, sleep=time.sleep) -> str:
    """The id of our qualification type of the HIT type's dataset and kind, made on first use. The HIT type
    row is locked meanwhile, so two callers make one type; a creation whose answer was lost is found again by
    its name."""
    with transaction.atomic():
        row = MturkHitType.objects.select_for_update().select_related("dataset").get(pk=hit_type.pk)
        if row.qualification_type_id:
            return row.qualification_type_id
        name = qualification_name(row)
        try:
            response = call(
                mturk,
                "create_qualification_type",
                sleep=sleep,
                Name=name,
                Keywords="crowdlabel, qualification",
                Description=f"Passed the check questions of {row.title!r}.",
                QualificationTypeStatus="Active",
            )
            type_id = response["QualificationType"]["QualificationTypeId"]
        except ClientError as exc:
            if error_code(exc) != "RequestError":
                raise
            type_id = _type_by_name(mturk, name, sleep)
            if type_id is None:
                raise
        row.qualification_type_id = type_id
        row.save(update_fields=["qualification_type_id"])
        return type_id


def qualification_grant(mturk, *, worker_id: int, dataset_id: int, kind: str, sleep=time.sleep) -> bool:
    """Give an MTurk worker who passed gold's qualification set on tasks of (dataset, kind) our qualification
    type of that HIT type.
    True when MTurk was called now; False when there is nothing to do (not an MTurk worker, no HIT type for
    the pair, or granted already). Safe to run again after any failure."""
    worker = Worker.objects.filter(pk=worker_id, source=WorkerSource.MTURK).first()
    hit_type = MturkHitType.objects.filter(dataset_id=dataset_id, kind=kind).first()
    if worker is None or hit_type is None:
        return False
    type_id = qualification_type_ensure(mturk, hit_type, sleep=sleep)
    try:
        with transaction.atomic():
            MturkQualificationGrant.objects.create(
                qualification_type_id=type_id, mturk_worker_id=worker.external_id
            )
    except IntegrityError:
        pass  # an earlier attempt wrote the row: done if MTurk answered it, else call again below
    grant = MturkQualificationGrant.objects.get(
        qualification_type_id=type_id, mturk_worker_id=worker.external_id
    )
    if grant.granted_at is not None:
        return False
    # Granting twice sets the same value again: a retry after a lost answer changes nothing at MTurk.
    call(
        mturk,
        "associate_qualification_with_worker",
        sleep=sleep,
        QualificationTypeId=type_id,
        WorkerId=worker.external_id,
        IntegerValue=1,
        SendNotification=True,
    )
    MturkQualificationGrant.objects.filter(pk=grant.pk, granted_at__isnull=True).update(
        granted_at=timezone.now()
    )
    return True


def on_qualification_passed(worker, dataset_id: int, kind: str, task_kind: str) -> None:
    """gold.events subscriber: an MTurk worker who qualified on tasks of a kind we publish HITs of gets a
    grant recorded in the outbox, sent when the submit's transaction commits. (Our qualification type belongs
    to the HIT type: dataset and task kind; gold's `kind` is the question kind inside those tasks.)"""
    if worker.source != WorkerSource.MTURK:
        return
    if not MturkHitType.objects.filter(dataset_id=dataset_id, kind=task_kind).exists():
        return
    from outbox.services import message_enqueue

    message_enqueue(GRANT_TASK, (worker.pk, dataset_id, task_kind), dataset_id=dataset_id)
