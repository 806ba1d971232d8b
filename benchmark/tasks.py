"""Celery tasks of the benchmark app (queue ``exports``): each loads a row id and calls one service."""

from celery import shared_task


@shared_task(
    name="benchmark.tasks.export_job_run", autoretry_for=(OSError,), retry_backoff=True, max_retries=3
)
def export_job_run_task(job_id: int) -> str:
    from .services import export_job_run

    return export_job_run(job_id).state


@shared_task(
    name="benchmark.tasks.submission_score", autoretry_for=(OSError,), retry_backoff=True, max_retries=3
)
def submission_score_task(submission_id: int) -> str:
    from .challenges import submission_score

    return submission_score(submission_id).state


@shared_task(name="benchmark.tasks.report_run")
def report_run_task(report_id: int) -> str:
    from .reports import report_run

    return report_run(report_id).state
