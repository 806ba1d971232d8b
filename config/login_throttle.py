"""Sign-in throttling with back-off, per (account, client address) and per client address, kept in Django's
cache (the local-memory default for one process; a shared cache such as Redis, CROWDLABEL_CACHE_URL, when
several processes serve).

After a number of free failures, each further failure locks the account from that address (or the address) for
twice as long as the last, up to a cap; while locked no password is even checked, so a locked account cannot be
guessed from there, and a success clears the count. The account's lock is per address so that it cannot be
turned against its owner: someone who knows a username (organizers' are e-mail addresses) and keeps failing
locks out only their own address, while the owner signs in from theirs. Each address is also limited over all
accounts, and a wrong password counts as a failed authentication of the address (config/auth_failures.py).

Every sign-in path goes through `authenticate()`, so the backend below covers the login page, the admin login
and any token endpoint built on DRF's AuthTokenSerializer; the forms add a message a person can act on.
Throttling races across processes (two failures may both read the same count): it slows guessing down by
orders of magnitude, which is its job, rather than counting exactly."""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError

from . import auth_failures
from .clientaddress import client_address

KEY_PREFIX = "login-throttle"


def lock_seconds(failures: int, free: int, base: float, cap: float) -> float:
    """How long `failures` failures in a row lock out: nothing for the first `free - 1`, then `base` doubling
    with each further failure, never over `cap`. Pure."""
    if failures < free:
        return 0.0
    return float(min(cap, base * 2 ** min(failures - free, 40)))


@dataclass(frozen=True)
class Scope:
    key: str
    free: int


def _scopes(request, username: str | None) -> list[Scope]:
    """The counts a sign-in touches: its address (when it came from a request) and its account from that
    address, last. A script calling authenticate() has no address: its account count is its own."""
    config = settings.CROWDLABEL
    scopes = []
    address = client_address(request) if request is not None else None
    if address is not None:
        scopes.append(Scope(f"{KEY_PREFIX}:addr:{address}", config["LOGIN_FREE_ATTEMPTS_ADDRESS"]))
    if username:
        digest = hashlib.sha256(username.strip().lower().encode("utf-8", "replace")).hexdigest()
        where = f":{address}" if address is not None else ""
        scopes.append(Scope(f"{KEY_PREFIX}:acct:{digest}{where}", config["LOGIN_FREE_ATTEMPTS_ACCOUNT"]))
    return scopes


def wait_seconds(request, username: str | None) -> int:
    """Seconds until this account and address may try again (0: now)."""
    now = time.time()
    entries = cache.get_many([scope.key for scope in _scopes(request, username)])
    wait = max((entry["until"] - now for entry in entries.values()), default=0.0)
    return max(0, math.ceil(wait))


def failure_record(request, username: str | None) -> None:
    config = settings.CROWDLABEL
    now = time.time()
    for scope in _scopes(request, username):
        entry = cache.get(scope.key) or {"failures": 0, "until": 0.0}
        failures = entry["failures"] + 1
        lock = lock_seconds(
            failures, scope.free, config["LOGIN_LOCK_BASE_SECONDS"], config["LOGIN_LOCK_MAX_SECONDS"]
        )
        # Counts are forgotten a day after the last failure (or after the lock, if longer).
        cache.set(scope.key, {"failures": failures, "until": now + lock}, timeout=int(max(lock, 86_400)))
    if request is not None:
        auth_failures.failure_record(request)


def success_record(request, username: str | None) -> None:
    if username:
        cache.delete(_scopes(request, username)[-1].key)


class SignInLocked(PermissionDenied):
    """Raised by the backend: `authenticate()` stops at once and reports a failed sign-in."""


def locked_message(wait: int) -> str:
    return f"Too many failed sign-ins from this address. Try again in {wait} seconds."


class ThrottledModelBackend(ModelBackend):
    """Django's model backend behind the per-(account, address) and per-address lockout."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None:
            username = kwargs.get(self._username_field())
        wait = wait_seconds(request, username)
        if wait:
            raise SignInLocked(locked_message(wait))
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if password is None:
            return user  # not a password sign-in: nothing was guessed
        if user is None:
            failure_record(request, username)
        else:
            success_record(request, username)
        return user

    @staticmethod
    def _username_field() -> str:
        from django.contrib.auth import get_user_model

        return get_user_model().USERNAME_FIELD


class _LockoutMessage:
    """Form mixin: a locked account or address is told how long to wait, before any password is checked."""

    def clean(self):
        wait = wait_seconds(self.request, self.cleaned_data.get("username"))
        if wait:
            raise ValidationError(locked_message(wait), code="locked")
        return super().clean()


class ThrottledAuthenticationForm(_LockoutMessage, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(_LockoutMessage, AdminAuthenticationForm):
    pass


class SignInView(LoginView):
    """The login page: 429 with Retry-After (and the wait in words) while the account or address is locked."""

    authentication_form = ThrottledAuthenticationForm

    def form_invalid(self, form):
        wait = wait_seconds(self.request, form.cleaned_data.get("username"))
        response = self.render_to_response(
            self.get_context_data(form=form, locked=locked_message(wait) if wait else "")
        )
        if wait:
            response.status_code = 429
            response.headers["Retry-After"] = str(wait)
        return response
