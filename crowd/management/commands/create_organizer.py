"""`create_organizer EMAIL`: the first account of a fresh deployment, an organizer (not staff), with a password
and an API token printed once."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_email

from config.roles import ORGANIZERS
from crowd.services import token_for, user_create


class Command(BaseCommand):
    help = (
        "Create an organizer account whose username is EMAIL. Prints a generated password and an API token "
        "once (change the password with `manage.py changepassword EMAIL`). For an existing user, use "
        "`manage.py grant_role USERNAME organizers` instead."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "email", metavar="EMAIL", help="The organizer's e-mail address, also their username."
        )

    def handle(self, *args, **opts):
        email = opts["email"].strip()
        try:
            validate_email(email)
        except ValidationError:
            raise CommandError(f"{email!r} is not an e-mail address") from None
        if get_user_model().objects.filter(username__iexact=email).exists():
            raise CommandError(
                f"a user {email!r} exists already; give them the role with `grant_role {email} organizers`"
            )
        password = secrets.token_urlsafe(12)
        user = user_create(username=email, password=password, roles=(ORGANIZERS,))
        user.email = email
        user.save(update_fields=["email"])
        self.stdout.write(f"created organizer {email}")
        self.stdout.write(f"username: {email} (the e-mail address)")
        self.stdout.write(f"password: {password}")
        self.stdout.write(f"API token: {token_for(user)}")
        self.stdout.write("Both are shown only now. Sign in at /accounts/login/ and open /organize/.")
