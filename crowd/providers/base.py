"""The provider interface and the bundle: a provider session answers `size` micro-tasks of one kind.

A bundle never holds tasks of its own: each item is leased through the queue (annotation.queue) when the
previous one is answered, so gold items, exclusions and blocks apply exactly as on the worker page, and no
lease sits idle while the worker is busy with an earlier item. The bundle row is locked (before any task row,
the queue's own first lock) while an item is leased or answered, so two tabs of one session never lease two
items at once or count one answer twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core import signing
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation import kinds, queue
from annotation.models import Assignment, AssignmentState, Dataset
from config.roles import WORKERS
from crowd.models import Bundle, BundleItem, BundleSize, BundleState, Worker, WorkerSource

SESSION_SALT = "crowd.providers.session"


class SessionInvalid(Exception):
    """A session token that is forged, expired, or names a bundle that does not exist."""


@dataclass(frozen=True)
class Completion:
    """What the worker's page does once the bundle is answered: show `code`, follow `redirect`, or post
    `fields` to `submit_to` (MTurk). Empty for providers with no hand-back (in-house)."""

    code: str = ""
    redirect: str = ""
    submit_to: str = ""
    fields: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "redirect": self.redirect,
            "submit_to": self.submit_to,
            "fields": self.fields,
        }


class CrowdProvider:
    """A source of workers. Subclasses name themselves (a `crowd.models.Provider` value) and say what a
    finished session hands back to the marketplace."""

    name: str = ""
    title: str = ""

    def completion(self, bundle: Bundle) -> Completion:
        return Completion()

    def scope(self, bundle: Bundle) -> tuple[int, ...]:
        """The datasets a session of this provider takes tasks of: its bundle's dataset unless the provider
        says more (a study link names its datasets)."""
        return (bundle.dataset_id,)


_registry: dict[str, CrowdProvider] = {}


def register(provider: CrowdProvider) -> CrowdProvider:
    _registry[provider.name] = provider
    return provider


def get(name: str) -> CrowdProvider:
    try:
        return _registry[name]
    except KeyError:
        raise LookupError(f"unknown crowd provider {name!r}; known: {', '.join(sorted(_registry))}") from None


def worker_for_external(*, source: str, external_id: str) -> Worker:
    """The worker behind a marketplace id, created on first sight with a passwordless account (the worker
    role, no way to sign in): a marketplace's workers never hold Crowdlabel credentials."""
    from crowd.services import user_create

    worker = Worker.objects.filter(source=source, external_id=external_id).first()
    if worker is not None:
        return worker
    try:
        with transaction.atomic():
            user = user_create(
                username=f"{source}-{external_id}"[:150],
                password=None,
                roles=(WORKERS,),
                source=source,
                external_id=external_id,
            )
            return user.worker
    except IntegrityError:  # a concurrent first visit created it
        return Worker.objects.get(source=source, external_id=external_id)


def bundle_size_for(dataset_id: int, kind: str) -> int:
    row = BundleSize.objects.filter(dataset_id=dataset_id, kind=kind).values_list("size", flat=True).first()
    return row or settings.CROWDLABEL["BUNDLE_SIZE"]


def bundle_open(*, provider: str, external_ref: str, worker: Worker, dataset: Dataset, kind: str) -> Bundle:
    """The session's bundle, created on the first visit; a reload (same provider and reference) resumes it.
    A reference already bound to another worker is refused: nobody continues someone else's session."""
    kinds.get(kind)  # LookupError names the known kinds
    get(provider)
    bundle = Bundle.objects.filter(provider=provider, external_ref=external_ref).first()
    if bundle is None:
        try:
            with transaction.atomic():
                bundle = Bundle.objects.create(
                    provider=provider,
                    external_ref=external_ref,
                    worker=worker,
                    dataset=dataset,
                    kind=kind,
                    size=bundle_size_for(dataset.pk, kind),
                )
        except IntegrityError:  # a concurrent first visit created it
            bundle = Bundle.objects.get(provider=provider, external_ref=external_ref)
    if bundle.worker_id != worker.pk or bundle.dataset_id != dataset.pk or bundle.kind != kind:
        raise SessionInvalid("this session belongs to another worker, dataset or task kind")
    return bundle


def session_token(bundle: Bundle) -> str:
    """A signed, expiring token naming the bundle: the only credential a provider session's page holds."""
    return signing.dumps({"b": bundle.pk, "w": bundle.worker_id}, salt=SESSION_SALT)


def session_bundle(token: str) -> Bundle:
    max_age = timedelta(seconds=settings.CROWDLABEL["BUNDLE_SESSION_SECONDS"])
    try:
        data = signing.loads(token, salt=SESSION_SALT, max_age=max_age)
    except signing.SignatureExpired:
        raise SessionInvalid("this session has expired; open the task link again") from None
    except signing.BadSignature:
        raise SessionInvalid("this session token is not valid") from None
    bundle = (
        Bundle.objects.select_related("worker__user")
        .filter(pk=data.get("b"), worker_id=data.get("w"))
        .first()
    )
    if bundle is None:
        raise SessionInvalid("this session token is not valid")
    return bundle


@dataclass(frozen=True)
class BundleStep:
    """The bundle after a lease or a submit: the item to answer now (None when complete or when the queue has
    nothing for this worker right now), progress, and the hand-back once complete."""

    bundle: Bundle
    assignment: Assignment | None
    completion: Completion | None
    replayed: bool = False
    extras: dict = field(default_factory=dict)  # the submit's extras (annotation.queue.SubmitResult.extras)
    # The worker instructions the lease statement selected with a freshly leased item (None: looked up).
    instructions: str | None = None


def _locked(bundle: Bundle) -> Bundle:
    return Bundle.objects.select_for_update(no_key=True).select_related("worker__user").get(pk=bundle.pk)


def _complete(bundle: Bundle, *, short: bool) -> None:
    bundle.state, bundle.short, bundle.completed_at = BundleState.COMPLETE, short, timezone.now()
    bundle.save(update_fields=["state", "short", "completed_at"])


def _step(
    bundle: Bundle, assignment: Assignment | None, replayed: bool = False, instructions: str | None = None
) -> BundleStep:
    done = bundle.state == BundleState.COMPLETE
    completion = get(bundle.provider).completion(bundle) if done else None
    return BundleStep(bundle, assignment, completion, replayed, instructions=instructions)


def study_lease_policy(worker, request: queue.LeaseRequest, now) -> queue.LeaseTerms | None:
    """Queue lease policy: a study-link participant works only inside an open session (one bundle per study
    and participant, never a second), so every dataset outside the scope of their open sessions (a study
    link's datasets: `CrowdProvider.scope`) is withheld, and every task kind but their open sessions' (a
    session leases its own kind only: `bundle_next`). The queue then says truly what a participant can take,
    and the starved-question sweep (which asks it, for everyone who has worked in the dataset) no longer waits
    for participants whose session is over (issue 34) or who are answering another kind. An MTurk worker is
    not restricted: one who finished an assignment may accept another HIT."""
    if worker.source != WorkerSource.EXTERNAL:
        return None
    asked = (
        {request.dataset_id}
        if request.dataset_id is not None
        else set(Dataset.objects.values_list("pk", flat=True))
    )
    open_in: set[int] = set()
    kinds: set[str] = set()
    for bundle in Bundle.objects.filter(worker_id=worker.pk, state=BundleState.OPEN):
        open_in.update(get(bundle.provider).scope(bundle))
        kinds.add(bundle.kind)
    return queue.LeaseTerms(withheld_datasets=frozenset(asked - open_in), only_kinds=frozenset(kinds))


def bundle_next(bundle: Bundle, *, now=None) -> BundleStep:
    """The item the worker should answer now: the open lease of this bundle if it is still valid, else the
    next task of the bundle's kind and dataset leased through the queue. When the queue has nothing more for
    this worker and some items are answered, the bundle completes short (the worker is not kept waiting)."""
    now = now or timezone.now()
    with transaction.atomic():
        bundle = _locked(bundle)
        if bundle.state == BundleState.COMPLETE:
            return _step(bundle, None)
        current = (
            Assignment.objects.filter(
                bundle_item__bundle=bundle, state=AssignmentState.LEASED, expires_at__gt=now
            )
            .select_related("task__image", "task__concept")
            .first()
        )
        if current is not None:
            return _step(bundle, current)
        scope = get(bundle.provider).scope(bundle)
        lease = queue.task_lease(
            worker=bundle.worker,
            kinds_wanted=[bundle.kind],
            dataset_id=scope[0] if len(scope) == 1 else None,
            datasets=scope if len(scope) > 1 else None,
            now=now,
        )
        if lease is None:
            if bundle.answered:
                _complete(bundle, short=True)
            return _step(bundle, None)
        BundleItem.objects.create(bundle=bundle, assignment_id=lease.assignment.pk)
        return _step(bundle, lease.assignment, instructions=lease.instructions)


def bundle_submit(
    bundle: Bundle, *, assignment_id: int, answer: Any, idempotency_key: queue.IdempotencyKey | str
) -> BundleStep:
    """Answer one item of the bundle exactly once (the queue's idempotent submit) and count it; the answer
    that fills the bundle completes it. An assignment outside this bundle is `Assignment.DoesNotExist`."""
    with transaction.atomic():
        bundle = _locked(bundle)
        if not BundleItem.objects.filter(bundle=bundle, assignment_id=assignment_id).exists():
            raise Assignment.DoesNotExist(f"no assignment {assignment_id} in this bundle")
        result = queue.assignment_submit(
            assignment=assignment_id, answer=answer, idempotency_key=idempotency_key, worker=bundle.worker
        )
        if not result.replayed:
            bundle.answered += 1
            bundle.save(update_fields=["answered"])
            if bundle.answered >= bundle.size:
                _complete(bundle, short=False)
        return replace(_step(bundle, result.assignment, result.replayed), extras=dict(result.extras))
