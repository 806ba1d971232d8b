"""Amazon Mechanical Turk through boto3's `mturk` client: HIT types, publishing HITs with an ExternalQuestion,
and the accepted-assignment check of the task page. Reconciling and paying lives in `mturk_sync`.

The sandbox is used unless CROWDLABEL_MTURK_PRODUCTION is set. Every call goes through `call`, which backs
off on throttling and network failures; calls that change money or HITs carry a UniqueRequestToken (or are
checked against MTurk's state before a retry), so retrying them is safe. AWS's notice (2026): MTurk accepts no
new customers from 2026-07-30 and existing requesters continue, so this provider serves organizers whose
platform has an existing requester account.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from xml.sax.saxutils import escape

import boto3
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from django.conf import settings
from django.db import transaction
from django.db.models import Sum

from annotation.models import Dataset
from crowd.models import (
    Bundle,
    HitState,
    MturkAssignment,
    MturkBudget,
    MturkHit,
    MturkHitType,
    Provider,
    WorkerSource,
)

from .base import Completion, CrowdProvider, SessionInvalid, bundle_open, register, worker_for_external

SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"
EXTERNAL_QUESTION_SCHEMA = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
)
# MTurk's system qualification types (the same ids in the sandbox).
APPROVAL_RATE_QUALIFICATION = "000000000000000000L0"
APPROVED_COUNT_QUALIFICATION = "00000000000000000040"
LOCALE_QUALIFICATION = "00000000000000000071"
RETRIED_ERROR_CODES = {"ThrottlingException", "Throttling", "ServiceUnavailable", "ServiceFault"}
NETWORK_ERRORS = (EndpointConnectionError, ConnectionClosedError, ReadTimeoutError)
CENT = Decimal("0.01")


class MturkError(Exception):
    """An MTurk step the organizer must act on; the message says what to do."""


# A stand-in client for this process (the simulator's fake marketplace, simulator.mturk_fake), set only
# through `client_replaced`; never a setting, so no deployment can switch to it by configuration.
_replacements: list[Any] = []


@contextmanager
def client_replaced(stand_in):
    """Within the block, `client()` answers `stand_in` (in this process only): the network edge, and nothing
    else, is replaced."""
    _replacements.append(stand_in)
    try:
        yield stand_in
    finally:
        _replacements.remove(stand_in)


def client():
    """The boto3 MTurk client: the sandbox unless production is switched on explicitly. Credentials come
    from the usual AWS sources (environment, profile, instance role)."""
    if _replacements:
        return _replacements[-1]
    endpoint = PRODUCTION_ENDPOINT if settings.CROWDLABEL["MTURK_PRODUCTION"] else SANDBOX_ENDPOINT
    return boto3.client(
        "mturk",
        region_name=settings.CROWDLABEL["MTURK_REGION"],
        endpoint_url=endpoint,
        config=Config(retries={"mode": "standard", "max_attempts": 3}),
    )


def error_code(exc: ClientError) -> str:
    return exc.response.get("Error", {}).get("Code", "")


def call(mturk, operation: str, *, attempts: int = 6, sleep: Callable[[float], None] = time.sleep, **params):
    """One MTurk call, retried with exponential backoff (1, 2, 4... seconds) on throttling, service faults
    and network failures. Parameter errors (botocore's ParamValidationError) and request errors are raised
    at once: retrying cannot fix them."""
    for attempt in range(attempts):
        try:
            return getattr(mturk, operation)(**params)
        except ClientError as exc:
            if error_code(exc) not in RETRIED_ERROR_CODES or attempt == attempts - 1:
                raise
        except NETWORK_ERRORS:
            if attempt == attempts - 1:
                raise
        sleep(2.0**attempt)
    raise AssertionError("unreachable")


def paginate(mturk, operation: str, key: str, sleep: Callable[[float], None] = time.sleep, **params):
    """Every item of a paginated MTurk list (NextToken), page by page."""
    token = None
    while True:
        page = call(mturk, operation, sleep=sleep, **params, **({"NextToken": token} if token else {}))
        yield from page.get(key, [])
        token = page.get("NextToken")
        if not token:
            return


# -- cost ---------------------------------------------------------------------------------------------------


def fee_rate(max_assignments: int) -> Decimal:
    """MTurk's commission: 20% of rewards and bonuses, 40% for HITs with 10 or more assignments. MTurk also
    refuses to raise a HIT from under 10 to 10 or more assignments, so items needing 10+ votes (calibration
    images) must be published with their full count up front."""
    return Decimal("0.40") if max_assignments >= 10 else Decimal("0.20")


def assignment_cost(reward: Decimal, max_assignments: int) -> Decimal:
    """Reward plus MTurk's fee for one assignment (the fee is at least one cent)."""
    return reward + reward_fee(reward, max_assignments)


def reward_fee(reward: Decimal, max_assignments: int) -> Decimal:
    return max((reward * fee_rate(max_assignments)).quantize(CENT, ROUND_HALF_UP), CENT)


def bonus_fee(bonus: Decimal) -> Decimal:
    """MTurk's fee on a bonus: 20% whatever the HIT's number of assignments (at least a cent)."""
    return max((bonus * Decimal("0.20")).quantize(CENT, ROUND_HALF_UP), CENT) if bonus > 0 else Decimal(0)


def cost_estimate(reward: Decimal, *, count: int, max_assignments: int) -> Decimal:
    return assignment_cost(reward, max_assignments) * count * max_assignments


def spent(dataset_id: int) -> Decimal:
    """What the dataset's HITs committed so far (their estimates at publication), for the budget check."""
    total = MturkHit.objects.filter(hit_type__dataset_id=dataset_id).aggregate(s=Sum("estimated_cost"))["s"]
    return total or Decimal("0")


# -- publishing ---------------------------------------------------------------------------------------------


def qualification_requirements(hit_type: MturkHitType) -> list[dict[str, Any]]:
    requirements: list[dict[str, Any]] = []
    if hit_type.min_approval_rate is not None:
        requirements.append(
            {
                "QualificationTypeId": APPROVAL_RATE_QUALIFICATION,
                "Comparator": "GreaterThanOrEqualTo",
                "IntegerValues": [hit_type.min_approval_rate],
                "ActionsGuarded": "DiscoverPreviewAndAccept",
            }
        )
    if hit_type.min_approved is not None:
        requirements.append(
            {
                "QualificationTypeId": APPROVED_COUNT_QUALIFICATION,
                "Comparator": "GreaterThanOrEqualTo",
                "IntegerValues": [hit_type.min_approved],
                "ActionsGuarded": "DiscoverPreviewAndAccept",
            }
        )
    if hit_type.locale:
        requirements.append(
            {
                "QualificationTypeId": LOCALE_QUALIFICATION,
                "Comparator": "EqualTo",
                "LocaleValues": [{"Country": hit_type.locale.upper()}],
                "ActionsGuarded": "DiscoverPreviewAndAccept",
            }
        )
    if hit_type.require_qualification and hit_type.qualification_type_id:
        # Workers may preview (to see what the task is) but only those who passed gold's set may accept.
        requirements.append(
            {
                "QualificationTypeId": hit_type.qualification_type_id,
                "Comparator": "Exists",
                "ActionsGuarded": "Accept",
            }
        )
    return requirements


def hit_type_params(hit_type: MturkHitType) -> dict[str, Any]:
    return {
        "AutoApprovalDelayInSeconds": hit_type.auto_approval_seconds,
        "AssignmentDurationInSeconds": hit_type.assignment_seconds,
        "Reward": str(hit_type.reward),
        "Title": hit_type.title,
        "Keywords": hit_type.keywords,
        "Description": hit_type.description,
        "QualificationRequirements": qualification_requirements(hit_type),
    }


def hit_type_ensure(mturk, hit_type: MturkHitType, *, sleep=time.sleep) -> str:
    """The MTurk HIT type id for the current settings, made again when they changed since (MTurk returns the
    same id for identical settings). A HIT type that requires our qualification gets its type made first."""
    if hit_type.require_qualification:
        from .mturk_qualification import qualification_type_ensure

        hit_type.qualification_type_id = qualification_type_ensure(mturk, hit_type, sleep=sleep)
    params = hit_type_params(hit_type)
    fingerprint = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()
    if hit_type.hit_type_id and hit_type.hit_type_fingerprint == fingerprint:
        return hit_type.hit_type_id
    response = call(mturk, "create_hit_type", sleep=sleep, **params)
    hit_type.hit_type_id, hit_type.hit_type_fingerprint = response["HITTypeId"], fingerprint
    hit_type.save(update_fields=["hit_type_id", "hit_type_fingerprint"])
    return hit_type.hit_type_id


def external_question() -> str:
    base = settings.CROWDLABEL["MTURK_PUBLIC_URL"].rstrip("/")
    if not base.startswith("https://"):
        raise MturkError(
            "set CROWDLABEL_MTURK_PUBLIC_URL to this site's public https:// address: MTurk frames only HTTPS pages"
        )
    height = settings.CROWDLABEL["MTURK_FRAME_HEIGHT"]
    return (
        f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_SCHEMA}">'
        f"<ExternalURL>{escape(base + '/mturk/task/')}</ExternalURL>"
        f"<FrameHeight>{height}</FrameHeight></ExternalQuestion>"
    )


def hit_type_configure(
    *, dataset: Dataset, kind: str, title: str = "", description: str = "", reward: Decimal | None = None
) -> MturkHitType:
    """Make the dataset's HIT type of this kind (title and reward needed), or change the given fields of the
    existing one; a change makes a new MTurk HIT type at the next publish (its fingerprint no longer matches)."""
    with transaction.atomic():
        hit_type = MturkHitType.objects.select_for_update().filter(dataset=dataset, kind=kind).first()
        if hit_type is None:
            if not title or reward is None:
                raise MturkError(
                    f"dataset {dataset.name} has no MTurk HIT type for kind {kind!r}: give a title and a reward "
                    "to make one (or create it in the admin)"
                )
            hit_type = MturkHitType(dataset=dataset, kind=kind)
        hit_type.title = title or hit_type.title
        hit_type.description = description or hit_type.description or hit_type.title
        hit_type.reward = reward if reward is not None else hit_type.reward
        if hit_type.reward <= 0:
            raise MturkError("the reward must be at least $0.01")
        hit_type.save()
        return hit_type


def budget_set(*, dataset: Dataset, cap: Decimal) -> MturkBudget:
    """The most the dataset may spend on MTurk with fees; lowering it below what is committed stops publishing."""
    if cap < 0:
        raise MturkError("the budget cap cannot be negative")
    budget, _ = MturkBudget.objects.update_or_create(dataset=dataset, defaults={"cap": cap})
    return budget


@dataclass(frozen=True)
class Batch:
    batch: str
    hits: int
    max_assignments: int
    estimated_cost: Decimal
    budget_left: Decimal


def hits_plan(*, dataset: Dataset, kind: str, count: int, max_assignments: int) -> Batch:
    """Write the pending HIT rows of a new batch, each with its UniqueRequestToken, after checking the budget.
    Nothing is sent to MTurk here; `hits_publish` does that (and can be rerun)."""
    if count < 1 or max_assignments < 1:
        raise MturkError("--count and --max-assignments must be at least 1")
    external_question()  # refuse now, not halfway through a batch
    with transaction.atomic():
        hit_type = MturkHitType.objects.filter(dataset=dataset, kind=kind).first()
        if hit_type is None:
            raise MturkError(
                f"dataset {dataset.name} has no MTurk HIT type for kind {kind!r}: create one first"
            )
        budget = MturkBudget.objects.select_for_update().filter(dataset=dataset).first()
        if budget is None:
            raise MturkError(f"dataset {dataset.name} has no MTurk budget cap: set one before publishing")
        per_hit = cost_estimate(hit_type.reward, count=1, max_assignments=max_assignments)
        estimate = per_hit * count
        left = budget.cap - spent(dataset.pk)
        if estimate > left:
            raise MturkError(
                f"publishing {count} HITs x {max_assignments} assignments costs about ${estimate} with MTurk's "
                f"fees; the budget of dataset {dataset.name} has ${left} left of ${budget.cap}"
            )
        batch = str(uuid.uuid4())
        MturkHit.objects.bulk_create(
            MturkHit(
                hit_type=hit_type,
                batch=batch,
                request_token=f"{batch[:8]}-{i}-{uuid.uuid4().hex[:16]}",
                max_assignments=max_assignments,
                estimated_cost=per_hit,
            )
            for i in range(count)
        )
        return Batch(batch, count, max_assignments, estimate, left - estimate)


def _is_duplicate_token(exc: ClientError) -> bool:
    message = exc.response.get("Error", {}).get("Message", "").lower()
    return error_code(exc) == "RequestError" and "unique" in message and "token" in message


def _hit_by_token(mturk, token: str, sleep) -> str | None:
    for hit in paginate(mturk, "list_hits", "HITs", sleep=sleep, MaxResults=100):
        if hit.get("RequesterAnnotation") == token:
            return hit["HITId"]
    return None


def hits_publish(mturk, *, batch: str, sleep=time.sleep) -> int:
    """Send the batch's pending HITs to MTurk; returns how many are published now. Safe to rerun after any
    failure: a HIT already made for a token is found again (its RequesterAnnotation is the token)."""
    published = 0
    hit_type_ids: dict[int, str] = {}
    for hit in MturkHit.objects.filter(batch=batch, state=HitState.PENDING).select_related("hit_type"):
        if hit.hit_type_id not in hit_type_ids:
            hit_type_ids[hit.hit_type_id] = hit_type_ensure(mturk, hit.hit_type, sleep=sleep)
        hit_type_id = hit_type_ids[hit.hit_type_id]
        try:
            response = call(
                mturk,
                "create_hit_with_hit_type",
                sleep=sleep,
                HITTypeId=hit_type_id,
                MaxAssignments=hit.max_assignments,
                LifetimeInSeconds=hit.hit_type.lifetime_seconds,
                Question=external_question(),
                RequesterAnnotation=hit.request_token,
                UniqueRequestToken=hit.request_token,
            )
            hit_id = response["HIT"]["HITId"]
        except ClientError as exc:
            if not _is_duplicate_token(exc):
                raise
            hit_id = _hit_by_token(mturk, hit.request_token, sleep)
            if hit_id is None:
                raise MturkError(f"MTurk knows token {hit.request_token} but lists no HIT for it") from exc
        MturkHit.objects.filter(pk=hit.pk, state=HitState.PENDING).update(
            hit_id=hit_id, state=HitState.PUBLISHED
        )
        published += 1
    return published


# -- the task page ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arrival:
    assignment_id: str
    hit: MturkHit
    worker_id: str
    submit_to: str
    confirmed: bool = True


# HITs whose accepted assignments may still be worked on: an expired HIT takes no new workers, but those who
# accepted it before keep their assignment until its duration runs out.
WORKABLE_HITS = (HitState.PUBLISHED, HitState.EXPIRED)


def submit_url(turk_submit_to: str) -> str:
    """The externalSubmit URL for MTurk's own hosts only: the page never posts to a host taken on trust."""
    origin = (turk_submit_to or "").rstrip("/")
    if origin not in settings.CROWDLABEL["MTURK_SUBMIT_HOSTS"]:
        raise MturkError("turkSubmitTo is not a Mechanical Turk host")
    return origin + "/mturk/externalSubmit"


def arrival_confirm(
    mturk, *, assignment_id: str, hit_id: str, worker_id: str, turk_submit_to: str
) -> Arrival:
    """Check the ids MTurk put in the URL as far as MTurk lets us before the work is submitted.

    GetAssignment (and ListAssignmentsForHIT) answer only for assignments whose status is Submitted, Approved
    or Rejected (the service model's AssignmentStatus has no "accepted" value), so a worker who has just
    accepted cannot be confirmed yet: MTurk answers RequestError. Such an arrival opens an unconfirmed session;
    `sync_hits` confirms it from MTurk's own list of submitted assignments (same AssignmentId, WorkerId and
    HITId) before anything is approved or paid, so ids taken on trust never earn money. An assignment MTurk
    does know must belong to this worker and HIT, or the page is refused."""
    submit_to = submit_url(turk_submit_to)
    hit = MturkHit.objects.select_related("hit_type").filter(hit_id=hit_id, state__in=WORKABLE_HITS).first()
    if hit is None:
        raise MturkError("this HIT is not one of ours")
    try:
        found = call(mturk, "get_assignment", AssignmentId=assignment_id)["Assignment"]
    except ClientError as exc:
        if error_code(exc) != "RequestError":
            raise MturkError(
                "Mechanical Turk could not check this assignment now; reload the page in a minute"
            ) from exc
        return Arrival(assignment_id, hit, worker_id, submit_to, confirmed=False)
    if found.get("WorkerId") != worker_id or found.get("HITId") != hit_id:
        raise MturkError("the assignment does not belong to this worker and HIT")
    return Arrival(assignment_id, hit, worker_id, submit_to, confirmed=True)


def session_start(arrival: Arrival) -> Bundle:
    """The arrival's bundle (resumed on a reload) and its assignment row with the submit URL. A session
    reference (the AssignmentId) stays bound to the first worker id that opened it."""
    seen = MturkAssignment.objects.filter(assignment_id=arrival.assignment_id).first()
    if seen is not None and (seen.mturk_worker_id != arrival.worker_id or seen.hit_id != arrival.hit.pk):
        raise SessionInvalid("this session belongs to another worker, dataset or task kind")
    worker = worker_for_external(source=WorkerSource.MTURK, external_id=arrival.worker_id)
    hit_type = arrival.hit.hit_type
    bundle = bundle_open(
        provider=Provider.MTURK,
        external_ref=arrival.assignment_id,
        worker=worker,
        dataset=hit_type.dataset,
        kind=hit_type.kind,
    )
    row, created = MturkAssignment.objects.get_or_create(
        assignment_id=arrival.assignment_id,
        defaults={
            "hit": arrival.hit,
            "mturk_worker_id": arrival.worker_id,
            "bundle": bundle,
            "submit_to": arrival.submit_to,
            "confirmed": arrival.confirmed,
        },
    )
    if not created and arrival.confirmed and not row.confirmed:
        MturkAssignment.objects.filter(pk=row.pk).update(confirmed=True)
    return bundle


class MturkProvider(CrowdProvider):
    name = Provider.MTURK
    title = "Mechanical Turk"

    def completion(self, bundle: Bundle) -> Completion:
        """The form MTurk expects: assignmentId plus at least one field of our own, posted to the
        externalSubmit URL the task page checked against the allow-list."""
        row = MturkAssignment.objects.get(bundle=bundle)
        return Completion(
            submit_to=row.submit_to,
            fields={
                "assignmentId": bundle.external_ref,
                "bundle": str(bundle.pk),
                "answered": str(bundle.answered),
            },
        )


provider = register(MturkProvider())
