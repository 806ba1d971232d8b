"""Celery tasks of the review app: each loads what it needs and calls one service."""

from celery import shared_task

from annotation.models import Dataset

from . import services


@shared_task(name="review.tasks.overlaps_scan", autoretry_for=(Exception,), retry_backoff=True, max_retries=5)
def overlaps_scan(dataset_id: int) -> dict:
    """Queue new duplicate and cross-class pairs of a dataset. Idempotent: a retry resumes the same run."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        return {"dataset_id": dataset_id, "missing": True}
    return vars(services.overlaps_scan(dataset))
