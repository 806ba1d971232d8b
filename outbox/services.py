"""Enqueue background work with the transaction that needs it; hand it to Celery on commit, and again from the
relay until a worker has finished it; park it after too many attempts.

A request never fails because the broker is down: the row is committed with the state change, the on-commit
send is best effort, and the relay (a beat task, or `manage.py outbox_relay`) delivers whatever is left once
the broker is back. Workers run each row at most once to completion (`message_run`): a repeated or
redelivered message finds the row done, or running under another delivery, and does nothing.

A running row is leased to its worker and the lease is renewed while the task runs (`Heartbeat`): when the
worker dies, however it dies, the lease runs out within OUTBOX_LEASE_SECONDS and the relay sends the row again,
whatever the task time limit. Work due later (a countdown, the back-off after a failure) waits in the table for
the relay rather than on the broker, where a killed worker holding it would lose it until the broker's
visibility timeout."""

from __future__ import annotations

import importlib
import logging
import threading
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.queue import sqlrows

from .models import Message, MessageState

log = logging.getLogger(__name__)

RUNNER = "outbox.tasks.message_run"
# Pending rows younger than this belong to their own on-commit send: the relay leaves them to it.
RELAY_GRACE = timedelta(seconds=5)
# Rows started before leases existed carry none: such a row is taken for lost once Celery's hard time limit
# and this margin have passed since it started.
RUNNING_MARGIN = timedelta(seconds=60)

_park_hooks: dict[str, list[Callable[[Message], None]]] = defaultdict(list)


def on_park(task_name: str) -> Callable[[Callable[[Message], None]], Callable[[Message], None]]:
    """Register what to do to the domain rows when a task is parked (e.g. mark an export job failed); the
    hook runs in the transaction that parks the row."""

    def register(hook: Callable[[Message], None]) -> Callable[[Message], None]:
        _park_hooks[task_name].append(hook)
        return hook

    return register


def celery_task(task_name: str):
    """The registered Celery task of that name; its module is imported first (in a web process tasks modules
    load lazily). ValueError for a name no module defines."""
    if task_name not in current_app.tasks:
        module = task_name.rpartition(".")[0]
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    try:
        return current_app.tasks[task_name]
    except KeyError:
        raise ValueError(f"no Celery task named {task_name!r}") from None


def max_attempts() -> int:
    return settings.CROWDLABEL["OUTBOX_MAX_ATTEMPTS"]


def running_deadline() -> timedelta:
    """How long a started row without a lease (one from before leases) may run before it counts as lost."""
    return timedelta(seconds=settings.CROWDLABEL["TASK_TIME_LIMIT_SECONDS"]) + RUNNING_MARGIN


def lease_length() -> timedelta:
    """How long a running row stays its worker's without a renewal (the heartbeat renews it every third)."""
    return timedelta(seconds=settings.CROWDLABEL["OUTBOX_LEASE_SECONDS"])


def lease_alive(message: Message, now: datetime) -> bool:
    if message.lease_until is not None:
        return message.lease_until > now
    return message.started_at is not None and message.started_at > now - running_deadline()


def message_enqueue(
    task_name: str,
    args: Iterable = (),
    kwargs: dict | None = None,
    *,
    dataset_id: int | None = None,
    countdown: float = 0,
) -> Message:
    """Record a call of the Celery task `task_name` in the current transaction; it is sent once that commits.
    Arguments must be JSON values (ids, names)."""
    celery_task(task_name)
    message = Message.objects.create(
        task_name=task_name,
        args=list(args),
        kwargs=kwargs or {},
        dataset_id=dataset_id,
        available_at=timezone.now() + timedelta(seconds=countdown),
    )
    transaction.on_commit(lambda: message_send(message.pk, countdown=countdown))
    return message


def message_record_later(
    writes: sqlrows.Writes, task_name: str, args: Iterable = (), *, dataset_id: int | None = None
):
    """Record a call of the Celery task `task_name` with the caller's `writes` (annotation.queue.sqlrows:
    a submit's, sent in the one statement that writes the answer's effects) and send nothing on commit: the relay
    delivers it on its first run after RELAY_GRACE (within `CROWDLABEL_OUTBOX_RELAY_SECONDS`). For work that may
    wait that long, recorded on a path whose response time must not depend on it (a gold answer's score)."""
    celery_task(task_name)
    message = Message(
        task_name=task_name, args=list(args), kwargs={}, dataset_id=dataset_id, available_at=timezone.now()
    )
    writes.insert(message)
    return message


def queue_for(task_name: str) -> str:
    """The named queue the task itself is routed to: the runner of an export runs on the exports queue."""
    return current_app.amqp.router.route({}, task_name)["queue"].name


def message_send(message_id: int, *, countdown: float = 0) -> bool:
    """Hand the row to the broker; False (and the row stays as it was, for the relay) when the broker cannot
    take it. Never raises for a broker problem: the caller's transaction has committed already."""
    message = Message.objects.filter(pk=message_id).only("pk", "task_name", "state").first()
    if message is None or message.state in (MessageState.DONE, MessageState.PARKED):
        return False
    if countdown > 0 and not current_app.conf.task_always_eager:
        # Due later: the relay sends it when it is due. A worker would hold a message with a countdown
        # unacknowledged until then, and a killed worker would take it along until the visibility timeout.
        return False
    from .tasks import message_run  # the task module imports this one

    try:
        message_run.apply_async((message.pk,), queue=queue_for(message.task_name))
    except Exception as exc:  # the broker is down or refuses: the relay sends it later
        log.warning("outbox: message %s (%s) stays pending: %s", message.pk, message.task_name, exc)
        return False
    # Guarded: in eager mode, or with a fast worker, the row may be running or done already.
    Message.objects.filter(pk=message_id, state=MessageState.PENDING).update(
        state=MessageState.SENT, sent_at=timezone.now()
    )
    return True


@dataclass(frozen=True)
class Claim:
    message: Message
    attempt: int


def _park(message: Message, error: str) -> None:
    message.state = MessageState.PARKED
    message.finished_at = timezone.now()
    message.last_error = error
    message.save(update_fields=["state", "finished_at", "last_error"])
    for hook in _park_hooks.get(message.task_name, ()):
        hook(message)
    log.error("outbox: parked %s after %s attempts: %s", message, message.attempts, error.splitlines()[-1:])


def _claim(message_id: int, delivery: str, now: datetime) -> Claim | None:
    with transaction.atomic():
        message = Message.objects.select_for_update().filter(pk=message_id).first()
        if message is None or message.state in (MessageState.DONE, MessageState.PARKED):
            return None
        if (
            message.state == MessageState.RUNNING
            and message.delivery != delivery
            and lease_alive(message, now)
        ):
            return None  # a duplicate message while another delivery runs it
        if message.attempts >= max_attempts():
            _park(
                message,
                message.last_error
                or f"its worker was lost on each of {message.attempts} attempts (killed, out of memory, "
                "or past the time limit)",
            )
            return None
        message.attempts += 1
        message.state = MessageState.RUNNING
        message.started_at = now
        message.lease_until = now + lease_length()
        message.delivery = delivery
        message.save(update_fields=["attempts", "state", "started_at", "lease_until", "delivery"])
        return Claim(message, message.attempts)


class Heartbeat:
    """Renews a running row's lease from a thread of the worker's process while the task runs, so the lease
    runs out only when that process is gone (SIGKILL, out of memory, the hard time limit, a lost machine):
    the relay then sends the row again within a lease, however long tasks may legitimately run. The thread has
    its own database connection (Django's are per thread) and closes it when the task ends."""

    def __init__(self, message_id: int, delivery: str):
        self.message_id = message_id
        self.delivery = delivery
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name=f"outbox-lease-{message_id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)  # a renewal in flight is harmless: it only touches a row still running

    def _beat(self) -> None:
        every = lease_length().total_seconds() / 3
        try:
            while not self.stopped.wait(every):
                try:
                    Message.objects.filter(
                        pk=self.message_id, delivery=self.delivery, state=MessageState.RUNNING
                    ).update(lease_until=timezone.now() + lease_length())
                except DatabaseError as exc:  # the next beat tries again on a new connection
                    log.warning("outbox: could not renew the lease of message %s: %s", self.message_id, exc)
                    connections[DEFAULT_DB_ALIAS].close()
        finally:
            connections.close_all()  # this thread's connections only


def _connection_recover(depth: int) -> None:
    """After a task raised, its connection may be anywhere: inside an atomic block whose exit never ran (a soft
    time limit is raised between any two bytecodes), in a transaction Django does not know about (psycopg then
    refuses the next atomic block with "can't change 'autocommit' now"), or lost with its server. Recording
    the failure starts on a new connection. At `depth` > 0 the run is inside a caller's transaction (an eager
    run in-process): that connection is the caller's, and is left to it."""
    if depth:
        return
    connection = connections[DEFAULT_DB_ALIAS]
    # Out of any block of the task's, so that close() lets the connection go; connect() resets the rest.
    connection.in_atomic_block = False
    connection.closed_in_transaction = False
    try:
        connection.close()
    except Exception as exc:  # already broken: dropping it is all that is left to do
        log.warning("outbox: closing the connection after a failed task: %s", exc)
    connection.connection = None


def backoff(attempt: int) -> float:
    """Seconds before the next attempt after `attempt` failed: 10 s, 20 s, 40 s ... at most 10 minutes."""
    return float(min(600, 10 * 2 ** (attempt - 1)))


def message_run(message_id: int, *, delivery: str) -> str:
    """Run the row's task in this worker: claim it (one more attempt), call the task, record the outcome.
    A failure is retried with back-off until `OUTBOX_MAX_ATTEMPTS`, then parked for a person to look at."""
    depth = len(connections[DEFAULT_DB_ALIAS].atomic_blocks)
    claim = _claim(message_id, delivery, timezone.now())
    if claim is None:
        return "skipped"
    message = claim.message
    try:
        with Heartbeat(message_id, delivery):
            task = celery_task(message.task_name)
            # Called directly: in this process, with its own transactions.
            task(*message.args, **message.kwargs)
    except Exception as exc:
        error = "".join(traceback.format_exception(exc))[-4000:]
        log.warning("outbox: %s failed on attempt %s: %s", message, claim.attempt, exc)
        _connection_recover(depth)
        with transaction.atomic():
            message = Message.objects.select_for_update().get(pk=message_id)
            if message.delivery != delivery or message.state != MessageState.RUNNING:
                return "superseded"
            message.last_error = error
            if message.attempts >= max_attempts():
                _park(message, error)
                return "parked"
            wait = backoff(message.attempts)
            message.state = MessageState.PENDING
            message.available_at = timezone.now() + timedelta(seconds=wait)
            message.lease_until = None
            message.save(update_fields=["state", "available_at", "lease_until", "last_error"])
            transaction.on_commit(lambda: message_send(message_id, countdown=wait))
        return "retrying"
    Message.objects.filter(pk=message_id, delivery=delivery, state=MessageState.RUNNING).update(
        state=MessageState.DONE, finished_at=timezone.now(), lease_until=None
    )
    return "done"


def relay(*, now: datetime | None = None, limit: int = 500, grace: timedelta = RELAY_GRACE) -> dict[str, int]:
    """Deliver what the on-commit send could not, and sweep work whose worker died: pending rows that are
    due (and older than `grace`, left to their own on-commit send), sent rows the broker lost (older than the
    visibility timeout), and running rows whose lease has passed (parked at once when they have used every
    attempt). Safe to run in several processes at once."""
    now = now or timezone.now()
    visibility = timedelta(seconds=settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 3600))
    counts = {"sent": 0, "resent": 0, "parked": 0, "failed": 0}
    with transaction.atomic():
        due = list(
            Message.objects.select_for_update(skip_locked=True)
            .filter(state=MessageState.PENDING, available_at__lte=now - grace)
            .order_by("available_at", "id")
            .values_list("pk", flat=True)[:limit]
        )
        lost = list(
            Message.objects.select_for_update(skip_locked=True)
            .filter(state=MessageState.SENT, sent_at__lt=now - visibility)
            .values_list("pk", flat=True)[:limit]
        )
        dead = list(
            Message.objects.select_for_update(skip_locked=True).filter(
                Q(lease_until__lt=now) | Q(lease_until__isnull=True, started_at__lt=now - running_deadline()),
                state=MessageState.RUNNING,
            )[:limit]
        )
        again = list(lost)
        for message in dead:
            if message.attempts >= max_attempts():
                _park(
                    message,
                    f"its worker was lost on each of {message.attempts} attempts (killed, out of memory, "
                    "or past the time limit)",
                )
                counts["parked"] += 1
            else:
                again.append(message.pk)
        # Back to pending, so the guarded send below marks them sent again; the next claim is a new attempt.
        Message.objects.filter(pk__in=again).update(state=MessageState.PENDING, lease_until=None)
    for pk in due:
        counts["sent" if message_send(pk) else "failed"] += 1
    for pk in again:
        counts["resent" if message_send(pk) else "failed"] += 1
    return counts


def message_retry(message: Message) -> Message:
    """A person asks for another round of attempts of a parked row."""
    with transaction.atomic():
        message = Message.objects.select_for_update().get(pk=message.pk)
        if message.state != MessageState.PARKED:
            raise ValueError(f"only parked work can be retried; this one is {message.state}")
        message.state = MessageState.PENDING
        message.attempts = 0
        message.available_at = timezone.now()
        message.finished_at = None
        message.save(update_fields=["state", "attempts", "available_at", "finished_at"])
        transaction.on_commit(lambda: message_send(message.pk))
    return message
