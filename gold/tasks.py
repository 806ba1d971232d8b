"""Background work of gold: scoring an embedded gold answer after the submit's response (gold.services)."""

from celery import shared_task

from . import services


@shared_task(
    name="gold.tasks.gold_answer_score", autoretry_for=(Exception,), retry_backoff=True, max_retries=5
)
def gold_answer_score(assignment_id: int) -> None:
    services.gold_answer_score(assignment_id)
