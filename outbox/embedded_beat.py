"""The beat schedule run in-process where there is no broker (the embedded default: SQLite, eager Celery,
`make run`): a daemon thread started by `runserver` calls each task of `CELERY_BEAT_SCHEDULE` eagerly when it is
due, as `celery beat` would send it to a worker, so lease expiry, the outbox relay, the overlap scans and the
stuck-question sweep run in every deployment. Each run has a database connection of its own, closed after it."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from celery import current_app
from celery.schedules import maybe_schedule
from django.conf import settings
from django.db import connections

from . import services

log = logging.getLogger(__name__)

# The longest the thread sleeps between two looks at the schedule (a stop request waits at most this long).
MAX_SLEEP_SECONDS = 1.0


def wanted() -> bool:
    """Run the schedule in this process: asked for (the default without a broker) and no broker configured
    (tasks run eagerly; with a broker, `celery beat` runs the schedule and a second copy would double it)."""
    return bool(settings.CROWDLABEL["EMBEDDED_BEAT"]) and bool(settings.CELERY_TASK_ALWAYS_EAGER)


@dataclass
class Entry:
    """One line of the schedule, with what this process has seen of it."""

    name: str
    task: str
    schedule: Any  # a celery schedule (an interval, crontab or solar), whatever beat_schedule gave
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    last_run_at: datetime | None = None
    runs: int = 0
    failures: int = 0
    last_error: str = ""


class EmbeddedBeat:
    """The schedule's entries and the thread that runs them. `tick` runs what is due (one entry after the other,
    in the calling thread) and says how long to sleep; `start` runs ticks in a daemon thread until `stop`."""

    def __init__(self, beat_schedule: dict[str, dict], *, app=None) -> None:
        self.app = app or current_app
        now = self.app.now()
        self.entries = [
            Entry(
                name=name,
                task=spec["task"],
                schedule=maybe_schedule(spec["schedule"], app=self.app),
                args=tuple(spec.get("args", ())),
                kwargs=dict(spec.get("kwargs", {})),
                last_run_at=now,  # as beat: the first run is one interval after the start
            )
            for name, spec in sorted(beat_schedule.items())
        ]
        self._stop = threading.Event()
        self.thread: threading.Thread | None = None

    def tick(self) -> float:
        """Run every entry that is due now; the seconds until the next one is (at most MAX_SLEEP_SECONDS)."""
        sleep = MAX_SLEEP_SECONDS
        for entry in self.entries:
            if self._stop.is_set():
                break
            due, next_in = entry.schedule.is_due(entry.last_run_at)
            if due:
                entry.last_run_at = self.app.now()
                self.run(entry)
                _, next_in = entry.schedule.is_due(entry.last_run_at)
            sleep = min(sleep, next_in)
        return max(sleep, 0.0)

    def run(self, entry: Entry) -> bool:
        """One run of the entry's task, eagerly (a retry of an autoretrying task runs at once), on a database
        connection of its own; an exception is logged and counted, never raised: the next run is due anyway."""
        entry.runs += 1
        try:
            # Looked up by name (its module imported first), as the outbox runs its rows.
            task = services.celery_task(entry.task)
            task.apply(args=entry.args, kwargs=entry.kwargs, throw=True)
        except Exception as exc:
            entry.failures += 1
            entry.last_error = f"{type(exc).__name__}: {exc}"
            log.exception("embedded beat: %s (%s) failed", entry.name, entry.task)
            return False
        finally:
            connections.close_all()
        return True

    def loop(self) -> None:
        while not self._stop.is_set():
            self._stop.wait(self.tick())

    def start(self) -> threading.Thread:
        self.thread = threading.Thread(target=self.loop, name="crowdlabel-embedded-beat", daemon=True)
        self.thread.start()
        return self.thread

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        if self.thread is not None:
            self.thread.join(timeout)

    def describe(self) -> str:
        """The schedule in words, for the serving command's banner."""
        return ", ".join(f"{e.name} ({_every(e.schedule)})" for e in self.entries)


def _every(schedule) -> str:
    run_every = getattr(schedule, "run_every", None)
    if run_every is not None:
        return f"every {run_every.total_seconds():g} s"
    return str(schedule)


def start() -> EmbeddedBeat | None:
    """Start the schedule in a daemon thread of this process when `wanted()`; None when not."""
    if not wanted():
        return None
    beat = EmbeddedBeat(settings.CELERY_BEAT_SCHEDULE)
    beat.start()
    return beat
