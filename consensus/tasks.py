"""Celery tasks of the consensus app (queue `consensus`): each takes ids and calls one service."""

from celery import shared_task
from django.db import OperationalError

from . import rebuild


@shared_task(
    name="consensus.tasks.calibration_rebuild",
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def calibration_rebuild(kind: str, concept_id: int, dataset_id: int | None = None) -> int | None:
    """Build (kind, concept)'s table once enough distinct calibration subjects are complete, refine it once
    the dataset's batch is; serve and decide what waited. Idempotent."""
    table = rebuild.calibration_rebuild(kind=kind, concept_id=concept_id, dataset_id=dataset_id)
    return table.pk if table is not None else None
