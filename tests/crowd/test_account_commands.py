"""`create_organizer EMAIL` and `grant_role`: a deployment's accounts without `manage.py shell`."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from config.roles import ORGANIZERS, WORKERS, has_role
from crowd.models import Worker

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_organizer_makes_a_non_staff_organizer_and_prints_password_and_token_once():
    out = run("create_organizer", "ada@example.org")
    user = get_user_model().objects.get(username="ada@example.org")
    assert has_role(user, ORGANIZERS) and not user.is_staff and not user.is_superuser
    assert user.email == "ada@example.org"
    password = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("password: "))
    token = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("API token: "))
    assert user.check_password(password)
    assert user.auth_token.key == token
    assert "username: ada@example.org (the e-mail address)" in out  # what to type on the sign-in page


@pytest.mark.parametrize("email", ["not-an-email", "a@b"])
def test_create_organizer_refuses_a_bad_address(email):
    with pytest.raises(CommandError, match="not an e-mail address"):
        run("create_organizer", email)


def test_create_organizer_refuses_an_existing_user_and_points_to_grant_role(organizer):
    get_user_model().objects.create_user(username="bob@example.org")
    with pytest.raises(CommandError, match="grant_role"):
        run("create_organizer", "bob@example.org")


def test_grant_role_gives_and_revokes_roles_and_a_worker_identity():
    user = get_user_model().objects.create_superuser(username="root", password="x-long-pass-1")
    run("grant_role", "root", WORKERS)
    assert Worker.objects.filter(user=user).exists()
    user.is_superuser = False
    user.save()
    run("grant_role", "root", ORGANIZERS)
    assert has_role(get_user_model().objects.get(pk=user.pk), ORGANIZERS)
    run("grant_role", "root", ORGANIZERS, "--revoke")
    assert not has_role(get_user_model().objects.get(pk=user.pk), ORGANIZERS)


def test_grant_role_names_an_unknown_role_or_user():
    with pytest.raises(CommandError, match="unknown role 'admins'"):
        run("grant_role", "x", "admins")
    with pytest.raises(CommandError, match="no user 'ghost'"):
        run("grant_role", "ghost", WORKERS)
