"""A lost database connection (a restarted server, a killed backend, a failover) never surfaces as a 500.

Django checks a persistent connection before reusing it (`CONN_HEALTH_CHECKS`), which covers connections that
died between requests. A connection lost during a request is handled here: a safe request (GET, HEAD,
OPTIONS: reads, and the lease, which is one self-contained statement) and a write whose view is marked
`idempotent_by_key` and that carries its Idempotency-Key (the submits: running one again is what the client's
retry with the same key would do, whether or not the first attempt's COMMIT got through) are run once more on a
fresh connection; any other request answers 503 with Retry-After, its transaction having rolled back with the
connection."""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError, connection
from django.http import JsonResponse

log = logging.getLogger(__name__)

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
KEY_HEADER = "Idempotency-Key"


def idempotent_by_key(view_method):
    """Mark a view method whose request, sent again with the same Idempotency-Key, changes nothing more and is
    answered with the stored result: this middleware may then run it once more after a lost connection."""
    view_method.idempotent_by_key = True
    return view_method


def _runs_again(request, view_func) -> bool:
    """Whether the request may run once more after a lost connection: a safe method, or a write that carries
    its key to a view method marked `idempotent_by_key` (DRF views: the view class's handler of the method)."""
    if request.method in SAFE_METHODS:
        return True
    if not request.headers.get(KEY_HEADER):
        return False
    view_class = getattr(view_func, "cls", None)
    name = (getattr(view_func, "actions", None) or {}).get(request.method.lower(), request.method.lower())
    return getattr(getattr(view_class, name, None), "idempotent_by_key", False)


# SQLSTATE classes of a lost connection: 08 connection exception, 57P0x the server shut the backend down
# (pg_terminate_backend is 57P01).
LOST_SQLSTATES = ("08", "57P")


def connection_lost(exception: BaseException) -> bool:
    """Whether the error means the connection was lost (not merely a failed statement on a live one). By the
    time a view's error gets here Django may have dropped the broken connection and opened another, so the
    error itself is the evidence: a server-side SQLSTATE of a lost connection, or a driver error with no
    SQLSTATE at all (libpq's "server closed the connection unexpectedly", "consuming input failed")."""
    if connection.vendor != "postgresql":
        return False
    cause = exception.__cause__
    sqlstate = getattr(cause, "sqlstate", None)
    if sqlstate is None and cause is not None and type(cause).__module__.startswith("psycopg"):
        return True
    if (sqlstate or "").startswith(LOST_SQLSTATES):
        return True
    raw = connection.connection
    if raw is None:
        return True
    if getattr(raw, "closed", False) or getattr(raw, "broken", False):
        return True
    pgconn = getattr(raw, "pgconn", None)  # psycopg: the libpq connection's own status, 0 is CONNECTION_OK
    return pgconn is not None and pgconn.status != 0


def _unavailable() -> JsonResponse:
    response = JsonResponse(
        {"detail": "The database connection was lost during this request and nothing was kept; retry it."},
        status=503,
    )
    response["Retry-After"] = "1"
    return response


class ConnectionLossMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.method not in SAFE_METHODS and _runs_again(request, view_func):
            # Read the body now (a submit's small JSON, its size checked before this): a second run parses it
            # from the copy Django keeps. Other writes, uploads among them, are never read ahead.
            request.body  # noqa: B018
        return None

    def process_exception(self, request, exception):
        if not isinstance(exception, OperationalError | InterfaceError) or not connection_lost(exception):
            return None
        connection.close()  # the next query opens a fresh connection
        match = request.resolver_match
        if match is None or getattr(request, "_db_retried", False) or not _runs_again(request, match.func):
            log.warning("database connection lost during %s %s: %s", request.method, request.path, exception)
            return _unavailable()
        request._db_retried = True
        log.warning("database connection lost during %s %s; retrying once", request.method, request.path)
        try:
            return match.func(request, *match.args, **match.kwargs)
        except (OperationalError, InterfaceError) as again:
            log.warning("retry of %s %s failed too: %s", request.method, request.path, again)
            connection.close()
            return _unavailable()
