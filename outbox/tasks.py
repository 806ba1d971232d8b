"""Celery tasks of the outbox: the runner of one recorded call, and the relay that sends and sweeps."""

from celery import shared_task

from . import services


@shared_task(name="outbox.tasks.message_run", bind=True, acks_late=True, reject_on_worker_lost=True)
def message_run(self, message_id: int) -> str:
    """Run one outbox row (the row counts attempts and parks poison work; see services.message_run)."""
    return services.message_run(message_id, delivery=self.request.id or "")


@shared_task(name="outbox.tasks.relay")
def relay() -> dict:
    """On a schedule: send pending work, re-send work the broker lost, sweep work whose worker died."""
    return services.relay()
