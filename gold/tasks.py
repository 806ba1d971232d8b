"""Background work of gold: updating a worker's score with an embedded gold answer after the submit's response,
and testing a decided question's voters again (gold.services)."""

from celery import shared_task

from . import services


@shared_task(
    name="gold.tasks.gold_score_update", autoretry_for=(Exception,), retry_backoff=True, max_retries=5
)
def gold_score_update(serving_id: int) -> None:
    services.gold_score_update(serving_id)


@shared_task(
    name="gold.tasks.gold_quality_update", autoretry_for=(Exception,), retry_backoff=True, max_retries=5
)
def gold_quality_update(question_id: int) -> None:
    services.voters_quality_check(question_id)
