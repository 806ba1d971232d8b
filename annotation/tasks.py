"""Celery tasks of the annotation app: each loads what it needs and calls one service."""

from celery import shared_task

from . import queue


@shared_task(
    name="annotation.tasks.leases_expire", autoretry_for=(Exception,), retry_backoff=True, max_retries=5
)
def leases_expire() -> int:
    return queue.leases_expire()
