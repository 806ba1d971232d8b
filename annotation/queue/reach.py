"""Who the queue can still hand a task to: of some tasks waiting in the queue, those a worker of their dataset's
crowd may lease now, decided by the lease's own condition (`statements.eligible_where` under each worker's
lease terms, built as `task_lease_next` builds them). Whatever stops a lease (a grant, an archived dataset, a
block, a missing qualification, an answer already given, a drawer's own box, a finished study session, a
session's task kind) stops it here too, so the starved sweep never waits for a worker the queue would hand
nothing, and never settles a task the queue would still hand out."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from annotation.models import Assignment, Task, TaskState

from .services import available_tasks


def waiting(now: datetime | None = None) -> Q:
    """The tasks a lease may take now as far as their own state goes: open, or leased with an expired lease
    (the lease statement reclaims it)."""
    return Q(state=TaskState.OPEN) | Q(state=TaskState.LEASED, lease_expires_at__lt=now or timezone.now())


def task_waiting(task: Task, now: datetime | None = None) -> bool:
    """`waiting` for one task row already read (and locked) by the caller."""
    return task.state == TaskState.OPEN or (
        task.state == TaskState.LEASED and task.lease_expires_at < (now or timezone.now())
    )


def crowd(dataset_id: int):
    """The workers who have taken a task of the dataset, in id order: the people a task of it waits for."""
    worker_model = Assignment._meta.get_field("worker").related_model
    taken = Assignment.objects.filter(task__dataset_id=dataset_id).values("worker_id")
    return worker_model.objects.filter(pk__in=taken).order_by("pk")


def tasks_reachable(*, dataset_id: int, task_ids: Iterable[int], now: datetime | None = None) -> set[int]:
    """The tasks of `task_ids` (of the dataset, waiting in the queue) that some worker of the dataset's crowd
    may lease now: one lease condition per worker, as their own lease would ask it (any kind, this dataset),
    stopping as soon as every task has someone. The policies are asked as a look-ahead (`LeaseRequest.look_ahead`):
    a task only a chance of some lease would offer (the good-standing policy's explored share) is not reachable,
    since nothing says when the chance comes."""
    now = now or timezone.now()
    wanted = set(Task.objects.filter(waiting(now), pk__in=list(task_ids)).values_list("pk", flat=True))
    reachable: set[int] = set()
    for worker in crowd(dataset_id):
        left = wanted - reachable
        if not left:
            break
        reachable |= set(
            available_tasks(worker=worker, dataset_id=dataset_id, now=now, look_ahead=True)
            .filter(pk__in=left)
            .values_list("pk", flat=True)
        )
    return reachable
