"""Celery tasks of the review app: each loads what it needs and calls one service."""

from celery import shared_task

from annotation.models import Dataset

from . import scan, stuck


@shared_task(name="review.tasks.overlaps_scan", autoretry_for=(Exception,), retry_backoff=True, max_retries=5)
def overlaps_scan(dataset_id: int) -> dict:
    """Check the dataset's accepted boxes not checked yet (the catch-up). Idempotent: a retry checks the rest."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        return {"dataset_id": dataset_id, "missing": True}
    scan.overlaps_scan_requested_clear(dataset)
    return vars(scan.overlaps_scan(dataset))


@shared_task(name="review.tasks.overlaps_scan_due")
def overlaps_scan_due() -> dict:
    """On a schedule: scan every dataset with accepted boxes whose overlaps were not checked yet."""
    due = scan.datasets_to_scan()
    for dataset_id in due:
        overlaps_scan.delay(dataset_id)
    return {"datasets": due}


@shared_task(name="review.tasks.stuck_enqueue", autoretry_for=(Exception,), retry_backoff=True, max_retries=5)
def stuck_enqueue() -> dict:
    """On a schedule: questions and box jobs in review without an open review item get one."""
    return vars(stuck.stuck_enqueue())
