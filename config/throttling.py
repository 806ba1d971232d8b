"""API rate limits per role: anonymous callers by address, signed-in callers by account at their role's rate
(REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]: anon, worker, reviewer, organizer). Over the limit a call gets 429
with Retry-After. A rate of None turns that role's limit off (the development default, so in-process
simulations run at full speed). Throttling slows abuse down; the guarantees live in constraints and locks."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from config.roles import ORGANIZERS, REVIEWERS, WORKERS, has_role

ROLE_SCOPES = ((ORGANIZERS, "organizer"), (REVIEWERS, "reviewer"), (WORKERS, "worker"))


def role_scope(user) -> str:
    """The throttle scope of a caller. A worker whose worker row is already loaded (token authentication
    loads it with the user) costs no query; anyone else's roles are read once and cached on the user."""
    if not user or not user.is_authenticated:
        return "anon"
    if user.is_superuser:
        return "organizer"
    if getattr(user, "_crowdlabel_roles", None) is None and get_user_model().worker.is_cached(user):
        return "worker"
    for role, scope in ROLE_SCOPES:
        if has_role(user, role):
            return scope
    return "worker"  # signed in without a role: the tightest signed-in rate


class RoleRateThrottle(SimpleRateThrottle):
    def __init__(self):
        pass  # the scope, hence the rate, depends on the caller: chosen in allow_request

    def allow_request(self, request, view):
        self.scope = role_scope(request.user)
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)  # read per call: tests change it

    def get_cache_key(self, request, view):
        ident = request.user.pk if request.user and request.user.is_authenticated else self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}
