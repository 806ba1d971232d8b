"""Celery tasks of the MTurk provider (routed to the `mturk` queue): publish a planned batch, sync HITs and
end those of finished work, grant our qualification. Each builds the client and calls one service; all are
safe to retry (tokens, row locks, unique grant rows)."""

from __future__ import annotations

from dataclasses import asdict

from celery import shared_task

from .providers import mturk, mturk_qualification, mturk_sync


@shared_task(name="crowd.mturk.hits_publish", autoretry_for=(Exception,), retry_backoff=True, max_retries=5)
def hits_publish(batch: str) -> int:
    return mturk.hits_publish(mturk.client(), batch=batch)


@shared_task(name="crowd.mturk.hits_sync", autoretry_for=(Exception,), retry_backoff=True, max_retries=3)
def hits_sync() -> dict:
    """On a schedule: settle submitted assignments, then expire and delete the HITs of finished work."""
    client = mturk.client()
    report = asdict(mturk_sync.hits_sync(client))
    disposed = mturk_sync.hits_dispose_finished(client)
    return report | {f"hits_{k}": v for k, v in asdict(disposed).items()}


@shared_task(name="crowd.mturk.qualification_grant")
def qualification_grant(worker_id: int, dataset_id: int, kind: str) -> bool:
    """Run through the outbox (which retries with back-off and parks it after too many failures), so a down
    MTurk never fails the submit that qualified the worker."""
    return mturk_qualification.qualification_grant(
        mturk.client(), worker_id=worker_id, dataset_id=dataset_id, kind=kind
    )
