"""One-time invitations (crowd.invitations): hashed at rest, single use, expiring; the role they carry."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from config.roles import ALL_ROLES, REVIEWERS, WORKERS, has_role
from crowd import invitations
from crowd.models import Invitation, Worker

pytestmark = pytest.mark.django_db


def test_role_groups_exist_after_migrate_without_the_demo_loader():
    assert set(Group.objects.filter(name__in=ALL_ROLES).values_list("name", flat=True)) == set(ALL_ROLES)


def test_the_token_is_stored_only_as_its_hash(dataset, organizer):
    issued = invitations.invitation_create(dataset=dataset, role=WORKERS, created_by=organizer)
    row = Invitation.objects.get()
    assert len(issued.token) >= 40
    assert row.token_hash == invitations.token_hash(issued.token)
    assert issued.token not in {str(v) for v in Invitation.objects.values().get().values()}


def test_accepting_creates_an_account_with_the_role_and_a_worker_identity(dataset, organizer):
    issued = invitations.invitation_create(dataset=dataset, role=WORKERS, created_by=organizer)
    accepted = invitations.invitation_accept(token=issued.token, username="ann", password="long-pass-4-ann")
    assert has_role(accepted.user, WORKERS) and not has_role(accepted.user, REVIEWERS)
    assert Worker.objects.filter(user=accepted.user).exists()
    assert accepted.user.check_password("long-pass-4-ann")
    assert accepted.invitation.accepted_by == accepted.user
    assert accepted.api_token


def test_a_token_works_once(dataset, organizer):
    issued = invitations.invitation_create(dataset=dataset, role=REVIEWERS, created_by=organizer)
    invitations.invitation_accept(token=issued.token, username="rev", password="long-pass-4-rev")
    with pytest.raises(invitations.InvitationInvalid) as caught:
        invitations.invitation_accept(token=issued.token, username="rev2", password="long-pass-4-rev")
    assert caught.value.code == "used"
    assert not Worker.objects.exists()
    from django.contrib.auth import get_user_model

    assert not get_user_model().objects.filter(username="rev2").exists()


def test_an_expired_or_unknown_token_is_refused_and_creates_nothing(dataset, organizer):
    issued = invitations.invitation_create(dataset=dataset, role=WORKERS, created_by=organizer)
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(invitations.InvitationInvalid) as caught:
        invitations.invitation_accept(token=issued.token, username="late", password="long-pass-4-late")
    assert caught.value.code == "expired"
    with pytest.raises(invitations.InvitationInvalid) as caught:
        invitations.invitation_check("not-a-token")
    assert caught.value.code == "unknown"
    assert not Worker.objects.exists()


def test_a_taken_username_is_refused_and_the_invitation_stays_open(dataset, organizer):
    issued = invitations.invitation_create(dataset=dataset, role=WORKERS, created_by=organizer)
    with pytest.raises(invitations.UsernameTaken):
        invitations.invitation_accept(token=issued.token, username="Organizer", password="long-pass-4-x")
    assert invitations.invitation_status(Invitation.objects.get()) == "open"


def test_only_worker_and_reviewer_roles_and_bounded_lifetimes_are_issued(dataset, organizer):
    with pytest.raises(ValueError, match="role"):
        invitations.invitation_create(dataset=dataset, role="organizers", created_by=organizer)
    with pytest.raises(ValueError, match="days"):
        invitations.invitation_create(
            dataset=dataset, role=WORKERS, created_by=organizer, ttl=timedelta(days=31)
        )
