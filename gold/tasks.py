"""Background work of gold: updating a worker's score with an embedded gold answer after the submit's response
(gold.services)."""

from celery import shared_task

from . import services


@shared_task(
    name="gold.tasks.gold_score_update", autoretry_for=(Exception,), retry_backoff=True, max_retries=5
)
def gold_score_update(serving_id: int) -> None:
    services.gold_score_update(serving_id)
