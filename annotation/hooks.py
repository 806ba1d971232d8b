"""Extension points of the queue for higher apps (gold): lease policies, submit and undo interceptors, the extras
of lease and submit responses. The queue calls them; it never imports the apps that register them. Everything
they return is data (`annotation.queue.contract`): the queue builds its SQL itself.

Register in `AppConfig.ready`; registering the same callable twice is a no-op. Lease policies run before the
lease statement, outside any transaction of the queue's (on PostgreSQL the lease is one statement); they only
read. Submit interceptors and submit extras run inside the submit's transaction with the task row locked, so
what they write commits or rolls back with the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .models import Assignment
    from .queue.contract import LeaseRequest, LeaseTerms, TaskChange
    from .queue.sqlrows import Writes

# (worker, request, now) -> the terms of this one lease (what is withheld, a draw from a reserved pool), or
# None when the policy has nothing to say. Called once per lease: nothing carries over to the next one.
LeasePolicy = Callable[[Any, "LeaseRequest", datetime], "LeaseTerms | None"]
# (assignment being submitted, its task row locked; the submit's writes, which it sends once the handlers are
# done) -> the change to write to the task when the interceptor handled the answer (the kind's handler is then
# skipped), or None when the answer is not its business. What it holds in the writes is sent with the task's.
SubmitInterceptor = Callable[["Assignment", "Writes"], "TaskChange | None"]
# (assignment whose answer its worker takes back, task row locked) -> the change to write to the task when the
# interceptor handled the undo (the kind's `on_withdraw` is then skipped), or None when it is not its business;
# it may raise `kinds.AnswerStands` to refuse the undo.
WithdrawInterceptor = Callable[["Assignment"], "TaskChange | None"]
# (submitted assignment, fresh or replayed) -> extra keys for the submit response (e.g. qualification
# feedback), or {}. Runs in the submit's transaction; the queue returns them in `SubmitResult.extras`.
SubmitExtras = Callable[["Assignment"], dict[str, Any]]
# (leased assignment, as the worker's browser receives it) -> extra keys for that view (e.g. that the task is a
# training question of a qualification attempt the worker is taking), or {}. Runs for every lease alike.
LeaseExtras = Callable[["Assignment"], dict[str, Any]]

lease_policies: list[LeasePolicy] = []
submit_interceptors: list[SubmitInterceptor] = []
withdraw_interceptors: list[WithdrawInterceptor] = []
submit_extras: list[SubmitExtras] = []
lease_extras: list[LeaseExtras] = []


def _add(registry: list, fn):
    if fn not in registry:
        registry.append(fn)
    return fn


def register_lease_policy(fn: LeasePolicy) -> LeasePolicy:
    return _add(lease_policies, fn)


def register_submit_interceptor(fn: SubmitInterceptor) -> SubmitInterceptor:
    return _add(submit_interceptors, fn)


def register_withdraw_interceptor(fn: WithdrawInterceptor) -> WithdrawInterceptor:
    return _add(withdraw_interceptors, fn)


def register_submit_extras(fn: SubmitExtras) -> SubmitExtras:
    return _add(submit_extras, fn)


def register_lease_extras(fn: LeaseExtras) -> LeaseExtras:
    return _add(lease_extras, fn)
