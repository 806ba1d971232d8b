"""Helpers for the box pipeline tests: a dataset with sized images, workers, and lease-and-answer shortcuts
through the queue services."""

from __future__ import annotations

import itertools

from annotation import queue
from annotation.models import Task
from tests import factories

_keys = itertools.count()


def image(dataset, width=640, height=480):
    return factories.ImageFactory(dataset=dataset, width=width, height=height)


def workers(n, prefix="w"):
    return [factories.user_with_roles(f"{prefix}{i}", ("workers",)).worker for i in range(n)]


def lease(worker, kind):
    """Lease the next task of `kind` for `worker` (None if none is available to them)."""
    return queue.task_lease_next(worker=worker, kinds_wanted=[kind])


def answer(worker, kind, value):
    assignment = lease(worker, kind)
    assert assignment is not None, f"{worker} got no {kind} task"
    queue.assignment_submit(assignment=assignment, answer=value, idempotency_key=f"k{next(_keys)}")
    return Task.objects.get(pk=assignment.task_id)


def vote(voters, kind, value: bool):
    """Each voter answers the open `kind` task until it closes."""
    for w in voters:
        task = answer(w, kind, {"answer": value})
        if task.state == "done":
            return task
    raise AssertionError(f"the {kind} task did not close after {len(voters)} votes")


def box_rule_use(settings, rule: str) -> None:
    """Ask the box pipeline's questions from now on under `rule`: "consensus" (the calibrated rule, the default)
    or "fixed" (first-to-k), as `CROWDLABEL_BOX_QUESTION_BACKEND` chooses; `settings` is pytest-django's
    fixture, which restores the choice after the test."""
    settings.CROWDLABEL = {**settings.CROWDLABEL, "BOX_QUESTION_BACKEND": rule}
