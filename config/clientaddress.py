"""Who is calling: the client address the throttles and the sign-in lock count by, and the note that requests
come through a proxy nobody told us about (a system check shows it: `manage.py check`, `check --deploy`)."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

from django.core import checks
from django.core.cache import cache
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

log = logging.getLogger(__name__)

# Set (for a week) when a request carried X-Forwarded-For while CROWDLABEL_NUM_PROXIES is 0; in the shared cache,
# so `manage.py check` run beside the servers sees what they saw (with CROWDLABEL_CACHE_URL, as any deployment
# of more than one process has).
FORWARDED_SEEN_KEY = "crowdlabel:x-forwarded-for-without-proxy-count"
FORWARDED_SEEN_SECONDS = 7 * 86_400


def client_address(request) -> str:
    """The caller's address: the socket's, or with REST_FRAMEWORK["NUM_PROXIES"] (CROWDLABEL_NUM_PROXIES) the
    entry that many places from the right of X-Forwarded-For, the one our own last proxy appended; the
    entries left of it are the client's to write."""
    return BaseThrottle().get_ident(request) or "unknown"


def forwarded_for_note(request) -> None:
    """Remember a request with X-Forwarded-For while no proxy count is set: behind a proxy, every client then
    shares the proxy's address, one rate limit and one sign-in lock for all. Logged the first time."""
    if api_settings.NUM_PROXIES or "HTTP_X_FORWARDED_FOR" not in request.META:
        return
    seen = {
        "at": time.time(),
        "remote_addr": request.META.get("REMOTE_ADDR", ""),
        "forwarded_for": request.META["HTTP_X_FORWARDED_FOR"][:200],
    }
    if cache.add(FORWARDED_SEEN_KEY, seen, timeout=FORWARDED_SEEN_SECONDS):
        log.warning(
            "A request from %s carried X-Forwarded-For (%s) but CROWDLABEL_NUM_PROXIES is 0: if a proxy is in "
            "front of the app, every client counts as the proxy's address for rate limits and sign-in locks; "
            "set CROWDLABEL_NUM_PROXIES to the number of proxies.",
            seen["remote_addr"],
            seen["forwarded_for"],
        )


def proxy_count_check(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """crowdlabel.W001: requests came through a proxy (X-Forwarded-For) and no proxy count is set."""
    if api_settings.NUM_PROXIES:
        return []
    try:
        seen = cache.get(FORWARDED_SEEN_KEY)
    except Exception as exc:  # the cache is down: say so rather than fail every management command
        return [
            checks.Info(f"Could not read the cache to look for proxied requests: {exc}", id="crowdlabel.I001")
        ]
    if not seen:
        return []
    when = datetime.fromtimestamp(seen["at"], UTC).strftime("%Y-%m-%d %H:%M UTC")
    return [
        checks.Warning(
            f"Requests arrived with X-Forwarded-For (first at {when}, from {seen['remote_addr']}: "
            f"{seen['forwarded_for']!r}) but CROWDLABEL_NUM_PROXIES is 0.",
            hint="Behind a proxy every client counts as the proxy's address: one API rate, one failed-"
            "authentication limit and one sign-in lock for everyone. Set CROWDLABEL_NUM_PROXIES to the number "
            "of proxies in front of the app (1 for one TLS proxy). With no proxy in front, clients sent the "
            "header themselves; it is ignored, and this note lapses after a week unless it happens again.",
            id="crowdlabel.W001",
        )
    ]
