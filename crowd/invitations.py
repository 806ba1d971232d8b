"""One-time invitation links: an organizer invites a worker or a reviewer to a dataset; the invitee picks a
username and password and gets an account with that role and an API token.

The function API (used by the organizer API, the accept page and in-house crowd providers):
`invitation_create` -> `IssuedInvitation` (the raw token, shown once), `invitation_check(token)` -> the open
`Invitation` or `InvitationInvalid`, `invitation_accept(token=..., username=..., password=...)` ->
`AcceptedInvitation`. Tokens are random 256-bit strings; only their SHA-256 is stored.

A worker invitation may name the datasets its worker may work on: accepting grants them
(`annotation.models.DatasetGrant`), in the transaction that creates the account. One that names none makes an
unscoped worker (every dataset), as every invitation did before scopes existed. A reviewer invitation may name
the datasets its reviewer may review the same way (`annotation.models.ReviewerGrant`); one that names none makes
an unscoped reviewer, who reviews every dataset's items as reviewers did before."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import DatasetGrant, ReviewerGrant

from .models import Invitation, InvitationRole, WorkerSource
from .services import token_for, user_create

DEFAULT_TTL = timedelta(days=7)
MAX_TTL = timedelta(days=30)


class InvitationInvalid(Exception):
    """The token is unknown, expired or already used; `code` says which (the message says it to a person)."""

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.code = code


class UsernameTaken(ValueError):
    pass


@dataclass(frozen=True)
class IssuedInvitation:
    invitation: Invitation
    token: str  # never stored: show it once


@dataclass(frozen=True)
class AcceptedInvitation:
    invitation: Invitation
    user: object
    api_token: str  # shown once to the new account holder


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def invitation_create(
    *, dataset, role: str, created_by, ttl: timedelta = DEFAULT_TTL, datasets=()
) -> IssuedInvitation:
    """Make an invitation to `dataset`; `datasets` are the datasets its worker may work on (or its reviewer may
    review), none for an unscoped one. The caller checks that `created_by` organizes each of them."""
    if role not in InvitationRole.values:
        raise ValueError(f"role must be one of {', '.join(InvitationRole.values)}, not {role!r}")
    if not timedelta(0) < ttl <= MAX_TTL:
        raise ValueError(f"an invitation lasts more than 0 and at most {MAX_TTL.days} days")
    datasets = list(datasets)
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        invitation = Invitation.objects.create(
            dataset=dataset,
            role=role,
            token_hash=token_hash(token),
            created_by=created_by,
            expires_at=timezone.now() + ttl,
        )
        invitation.datasets.set(datasets)
    return IssuedInvitation(invitation, token)


def invitation_check(token: str) -> Invitation:
    """The open invitation this token opens, or InvitationInvalid naming why not."""
    invitation = (
        Invitation.objects.select_related("dataset").filter(token_hash=token_hash(token or "")).first()
    )
    if invitation is None:
        raise InvitationInvalid("This invitation link is not valid.", "unknown")
    if invitation.accepted_at is not None:
        raise InvitationInvalid("This invitation link has been used already.", "used")
    if invitation.expires_at <= timezone.now():
        raise InvitationInvalid(
            "This invitation link has expired; ask the organizer for a new one.", "expired"
        )
    return invitation


def invitation_accept(*, token: str, username: str, password: str) -> AcceptedInvitation:
    """Create the invitee's account with the invitation's role, in one transaction with marking the invitation
    used. A second accept of the same token (even a concurrent one) fails: the update that marks it used only
    matches while `accepted_at` is empty, and the account is rolled back with it."""
    invitation = invitation_check(token)
    if get_user_model().objects.filter(username__iexact=username).exists():
        raise UsernameTaken(f"the username {username!r} is taken; choose another")
    try:
        with transaction.atomic():
            user = user_create(
                username=username,
                password=password,
                roles=(invitation.role,),
                source=WorkerSource.INHOUSE,
            )
            now = timezone.now()
            marked = Invitation.objects.filter(
                pk=invitation.pk, accepted_at__isnull=True, expires_at__gt=now
            ).update(accepted_at=now, accepted_by=user)
            if marked != 1:
                raise InvitationInvalid("This invitation link has been used already.", "used")
            scope = list(invitation.datasets.values_list("pk", flat=True))
            if scope and invitation.role == InvitationRole.WORKER:
                DatasetGrant.objects.bulk_create(
                    DatasetGrant(worker=user.worker, dataset_id=dataset_id) for dataset_id in scope
                )
            elif scope and invitation.role == InvitationRole.REVIEWER:
                ReviewerGrant.objects.bulk_create(
                    ReviewerGrant(user=user, dataset_id=dataset_id) for dataset_id in scope
                )
            api_token = token_for(user)
    except IntegrityError:  # the same username created concurrently
        raise UsernameTaken(f"the username {username!r} is taken; choose another") from None
    invitation.refresh_from_db()
    return AcceptedInvitation(invitation, user, api_token)


def invitation_status(invitation: Invitation, now=None) -> str:
    if invitation.accepted_at is not None:
        return "accepted"
    return "expired" if invitation.expires_at <= (now or timezone.now()) else "open"
