"""Creating users with their roles and worker identities."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from rest_framework.authtoken.models import Token

from config.roles import ALL_ROLES, WORKERS

from .models import Worker, WorkerSource


def roles_ensure() -> None:
    for name in ALL_ROLES:
        Group.objects.get_or_create(name=name)


def user_create(
    *,
    username: str,
    password: str | None,
    roles: tuple[str, ...] = (),
    source: str = WorkerSource.INHOUSE,
    external_id: str = "",
):
    """Create a user with the given roles; a user with the worker role also gets a Worker identity.
    A None password leaves the account usable only through a token or an external sign-in."""
    unknown = set(roles) - set(ALL_ROLES)
    if unknown:
        raise ValueError(f"unknown roles: {', '.join(sorted(unknown))}")
    with transaction.atomic():
        roles_ensure()
        user = get_user_model().objects.create_user(username=username, password=password)
        if password is None:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        user.groups.set(Group.objects.filter(name__in=roles))
        if WORKERS in roles:
            Worker.objects.create(user=user, source=source, external_id=external_id)
        return user


def token_for(user) -> str:
    token, _ = Token.objects.get_or_create(user=user)
    return token.key
