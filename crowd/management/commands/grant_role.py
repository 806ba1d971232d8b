"""`grant_role USERNAME ROLE [--revoke]`: give an existing user (e.g. one made with `createsuperuser`) a
platform role, or take it away. The worker role also gives the user a worker identity."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

from config.roles import ALL_ROLES, WORKERS
from crowd.models import Worker


class Command(BaseCommand):
    help = "Give USERNAME the role ROLE (workers, reviewers or organizers), or take it away with --revoke."

    def add_arguments(self, parser):
        parser.add_argument("username", metavar="USERNAME")
        parser.add_argument("role", metavar="ROLE", help=f"one of {', '.join(ALL_ROLES)}")
        parser.add_argument("--revoke", action="store_true", help="Remove the role instead of granting it.")

    def handle(self, *args, **opts):
        role = opts["role"]
        if role not in ALL_ROLES:
            raise CommandError(f"unknown role {role!r}; roles are {', '.join(ALL_ROLES)}")
        user = get_user_model().objects.filter(username=opts["username"]).first()
        if user is None:
            raise CommandError(f"no user {opts['username']!r}")
        group, _ = Group.objects.get_or_create(name=role)
        if opts["revoke"]:
            user.groups.remove(group)
            self.stdout.write(f"{user.username}: {role} revoked")
            return
        user.groups.add(group)
        if role == WORKERS:
            Worker.objects.get_or_create(user=user)
        self.stdout.write(f"{user.username}: {role} granted")
