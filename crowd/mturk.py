"""Celery tasks of the MTurk provider (routed to the `mturk` queue): publish a planned batch, sync HITs.
Each builds the client and calls one service; both are safe to retry (tokens and row locks)."""

from __future__ import annotations

from dataclasses import asdict

from celery import shared_task

from .providers import mturk, mturk_sync


@shared_task(name="crowd.mturk.hits_publish", autoretry_for=(Exception,), retry_backoff=True, max_retries=5)
def hits_publish(batch: str) -> int:
    return mturk.hits_publish(mturk.client(), batch=batch)


@shared_task(name="crowd.mturk.hits_sync", autoretry_for=(Exception,), retry_backoff=True, max_retries=3)
def hits_sync() -> dict:
    return asdict(mturk_sync.hits_sync(mturk.client()))
