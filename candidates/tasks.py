"""Celery task of candidate imports: load the import and settle its next batch (services.candidate_import_run)."""

from celery import shared_task

from . import services


@shared_task(name="candidates.tasks.candidate_import_run")
def candidate_import_run(import_id: int) -> str:
    """Download and ingest the next batch of an import's pending rows; it queues the following batch itself."""
    job = services.candidate_import_run(import_id)
    return f"{job.done_rows}/{job.total} rows"
