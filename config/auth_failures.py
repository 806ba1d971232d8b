"""Failed authentication per client address: invalid API tokens, anonymous calls to signed-in endpoints (both
answered 401) and wrong passwords count against the caller's address; past CROWDLABEL_AUTH_FAILURE_RATE (e.g.
30/min) its requests are answered 429 with Retry-After before any credential is checked, until the oldest
counted failure leaves the window. A signed-in browser session is not held up by others' failures at its
address (a shared office or NAT): its credential was checked before. Kept in Django's cache like the sign-in
lock (config/login_throttle.py); a throttle, racing across processes by design."""

from __future__ import annotations

import math
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponse, JsonResponse

from .clientaddress import client_address, forwarded_for_note

KEY_PREFIX = "auth-failures"
PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def parse_rate(rate: str) -> tuple[int, int]:
    """Failures allowed and the window in seconds: (30, 60) for "30/min"; at least one failure is allowed."""
    number, _, period = rate.partition("/")
    return max(1, int(number)), PERIODS[period[0]]


def _rate() -> tuple[int, int] | None:
    rate = settings.CROWDLABEL["AUTH_FAILURE_RATE"]
    return parse_rate(rate) if rate else None


def _key(address: str) -> str:
    return f"{KEY_PREFIX}:{address}"


def wait_seconds(address: str, now: float | None = None) -> int:
    """Seconds until `address` may try again (0: now)."""
    rate = _rate()
    if rate is None:
        return 0
    allowed, window = rate
    now = time.time() if now is None else now
    history = [moment for moment in cache.get(_key(address), []) if moment > now - window]
    if len(history) < allowed:
        return 0
    return max(1, math.ceil(history[allowed - 1] + window - now))


def failure_record(request) -> None:
    """One failed authentication from the request's address (newest first, only what the window needs)."""
    rate = _rate()
    if rate is None:
        return
    allowed, window = rate
    now = time.time()
    key = _key(client_address(request))
    history = [now] + [moment for moment in cache.get(key, []) if moment > now - window]
    cache.set(key, history[:allowed], timeout=window)


def too_many_message(wait: int) -> str:
    return f"Too many failed authentications from this address. Try again in {wait} seconds."


class AuthFailureThrottleMiddleware:
    """Counts 401 answers per address and refuses an address over the limit; notes proxied requests."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        forwarded_for_note(request)
        if _rate() is None:
            return self.get_response(request)
        if not self._signed_in_session(request):
            wait = wait_seconds(client_address(request))
            if wait:
                return self._refused(request, wait)
        response = self.get_response(request)
        if response.status_code == 401:
            failure_record(request)
        return response

    @staticmethod
    def _signed_in_session(request) -> bool:
        return (
            settings.SESSION_COOKIE_NAME in request.COOKIES
            and "HTTP_AUTHORIZATION" not in request.META
            and request.user.is_authenticated
        )

    @staticmethod
    def _refused(request, wait: int) -> HttpResponse:
        message = too_many_message(wait)
        if request.path.startswith("/api/"):
            response = JsonResponse({"detail": message}, status=429)
        else:
            response = HttpResponse(message, status=429, content_type="text/plain; charset=utf-8")
        response.headers["Retry-After"] = str(wait)
        return response
