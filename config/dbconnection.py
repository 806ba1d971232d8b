"""A lost database connection (a restarted server, a killed backend, a failover) never surfaces as a 500.

Django checks a persistent connection before reusing it (`CONN_HEALTH_CHECKS`), which covers connections that
died between requests. A connection lost during a request is handled here: a safe request (GET, HEAD,
OPTIONS: reads, and the lease, which is one self-contained statement) and a write whose view is marked
`idempotent_by_key` and that carries its Idempotency-Key (the submits: running one again is what the client's
retry with the same key would do, whether or not the first attempt's COMMIT got through), or marked
`idempotent_by_item_keys` (a batch of answers, each with its key in the body), are run again on a
fresh connection, up to `LOST_RETRIES` times. So is any other write with a JSON (or empty) body that had committed nothing when its
connection was lost (each write statement is watched: one outside a transaction commits at once, one inside
counts once its transaction's commit went through), since all it did was rolled back with the connection and
running it again is what the client's retry would do. So is a view marked `idempotent_by_content` (the image
upload: a file whose bytes the dataset holds is answered as stored; the export request: the same request while
its job is queued answers that job; so a second run stores nothing twice and answers what the first stored): its files are never read ahead, and a run again parses them from the stream or
takes them rewound from the first run's parse. Any other request (a write that had committed part of its work)
answers 503 with Retry-After.

A transaction PostgreSQL rolled back because of a concurrent one (40P01 deadlock detected, 40001 serialization
failure) kept nothing either: the same requests are run again, up to `CONFLICT_RETRIES` times after a short
jittered pause, and if every run fails so, answered 503 with Retry-After, never 500. A run again that meets the
other kind (a killed backend while a lock is busy) goes on within that kind's own count rather than answering
503 at once. The lock order of docs/architecture.md keeps such conflicts out of the pipelines; this is the guarantee when one gets through."""

from __future__ import annotations

import logging
import random
import time

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


def idempotent_by_item_keys(view_method):
    """Mark a view method whose body is a list of writes each carrying its own Idempotency-Key (a batch of
    answers): sent again, each is answered with what its key stored and nothing changes twice, so the
    middleware may run it once more, as it runs a keyed submit, without a key in the header."""
    view_method.idempotent_by_item_keys = True
    return view_method


def idempotent_by_content(view_method):
    """Mark a view method whose request, sent again as it is, stores nothing twice and answers what the first
    run stored (an upload that keeps one image per distinct file): the middleware may run it again after a
    lost connection or a deadlock, without a key and without reading its (possibly large) body ahead."""
    view_method.idempotent_by_content = True
    return view_method


def _nothing_committed(request) -> bool:
    """A watched write (see CommitWatch) that has committed nothing so far."""
    watch = getattr(request, "_commit_watch", None)
    return watch is not None and not watch.committed


def _handler(view_func, method: str):
    """The view method that handles `method` (DRF views: the view class's handler, a viewset's action)."""
    view_class = getattr(view_func, "cls", None)
    name = (getattr(view_func, "actions", None) or {}).get(method.lower(), method.lower())
    return getattr(view_class, name, None)


def _by_content(request, view_func) -> bool:
    return getattr(_handler(view_func, request.method), "idempotent_by_content", False)


def _runs_again(request, view_func) -> bool:
    """Whether the request may run once more after a lost connection: a safe method, a write to a view method
    marked `idempotent_by_content` or `idempotent_by_item_keys`, or a write that carries its key to one marked
    `idempotent_by_key`."""
    if request.method in SAFE_METHODS or _by_content(request, view_func):
        return True
    if getattr(_handler(view_func, request.method), "idempotent_by_item_keys", False):
        return True
    if not request.headers.get(KEY_HEADER):
        return False
    return getattr(_handler(view_func, request.method), "idempotent_by_key", False)


def _rewind_uploads(request) -> None:
    """Rewind the files a first run parsed (Django keeps them on the request), so a run again reads them whole."""
    files = getattr(request, "_files", None)
    for _name, uploads in files.lists() if files is not None else ():
        for upload in uploads:
            upload.seek(0)


def _run(request, match):
    _rewind_uploads(request)
    return match.func(request, *match.args, **match.kwargs)


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


# SQLSTATEs of a transaction rolled back for a concurrent one's sake: deadlock detected, serialization failure.
CONFLICT_SQLSTATES = ("40P01", "40001")
# Runs after the first, and the pause before run n (seconds, times a jitter of 0.5-1.5): 20, 40, 80 ms.
CONFLICT_RETRIES = 3
CONFLICT_PAUSE = 0.02


def transaction_conflict(exception: BaseException) -> bool:
    """Whether the error is PostgreSQL rolling the transaction back for a concurrent one's sake."""
    return getattr(exception.__cause__, "sqlstate", None) in CONFLICT_SQLSTATES


# Runs after the first when the connection is lost again and again (a server restarting, backends killed every
# few seconds while a slow request runs): each on a fresh connection, then 503.
LOST_RETRIES = 3

# The two kinds of failure a request may run again after.
LOST_CONNECTION = "connection lost"
CONFLICT = "transaction conflict"

LOST = "The database connection was lost during this request and nothing was kept; retry it."
CONFLICTED = "The request met concurrent work on the same rows and nothing was kept; retry it."


def _unavailable(detail: str = LOST) -> JsonResponse:
    response = JsonResponse({"detail": detail}, status=503)
    response["Retry-After"] = "1"
    return response


# Statements that change nothing stored: anything else counts as a write (when in doubt, as one that may
# have committed, so the request is not run again).
READ_ONLY_STATEMENTS = ("SELECT", "SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK", "SHOW")


class CommitWatch:
    """An execute wrapper that notes whether the request has committed any write so far: a write outside a
    transaction commits at once, one inside counts once its transaction commits (`on_commit`, registered
    with every write, so a rolled-back savepoint cannot hide a later one)."""

    def __init__(self) -> None:
        self.committed = False

    def _commit_seen(self) -> None:
        self.committed = True

    def __call__(self, execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not self.committed and not str(sql).lstrip().upper().startswith(READ_ONLY_STATEMENTS):
            db = context["connection"]
            if db.in_atomic_block:
                db.on_commit(self._commit_seen)
            else:
                self.committed = True
        return result


def _json_or_empty(request) -> bool:
    content_type = request.META.get("CONTENT_TYPE", "")
    return content_type.startswith("application/json") or request.META.get("CONTENT_LENGTH") in (
        None,
        "",
        "0",
    )


class ConnectionLossMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            return self.get_response(request)
        finally:
            watch = getattr(request, "_commit_watch", None)
            if watch is not None and watch in connection.execute_wrappers:
                connection.execute_wrappers.remove(watch)

    def process_view(self, request, view_func, view_args, view_kwargs):
        # An upload (idempotent by content) is never read ahead: a run again parses it then, or rewinds it.
        if request.method in SAFE_METHODS or _by_content(request, view_func):
            return None
        if _runs_again(request, view_func):
            # Read the body now (a submit's small JSON, its size checked before this): a second run parses it
            # from the copy Django keeps.
            request.body  # noqa: B018
        elif _json_or_empty(request):
            # A small JSON write: read ahead too, and watched for commits, so it may run again when its
            # connection is lost before it committed anything. Uploads (multipart) are never read ahead.
            request.body  # noqa: B018
            request._commit_watch = CommitWatch()
            connection.execute_wrappers.append(request._commit_watch)
        return None

    def process_exception(self, request, exception):
        if isinstance(exception, OperationalError) and transaction_conflict(exception):
            match = request.resolver_match
            if match is None or connection.needs_rollback:
                return None
            if not (_runs_again(request, match.func) or _nothing_committed(request)):
                return None  # other requests are left to the error handling they had
            return self._run_again(request, match, exception, CONFLICT)
        if not isinstance(exception, OperationalError | InterfaceError) or not connection_lost(exception):
            return None
        connection.close()  # the next query opens a fresh connection
        match = request.resolver_match
        if (
            match is None
            or getattr(request, "_db_retried", False)
            or not (_runs_again(request, match.func) or _nothing_committed(request))
        ):
            log.warning("database connection lost during %s %s: %s", request.method, request.path, exception)
            return _unavailable()
        return self._run_again(request, match, exception, LOST_CONNECTION)

    def _run_again(self, request, match, exception, kind: str):
        """Run a request that may run again once more after each failure of either kind, a lost connection
        (on a fresh one, at most `LOST_RETRIES` times) or a deadlock or serialization failure (after a short
        jittered pause, at most `CONFLICT_RETRIES` times), whichever strikes each run: under a killed backend
        and a busy lock at once a run again may meet the other kind. When a kind's runs are spent, or the
        request committed part of its work, or the database fails otherwise, 503 with Retry-After."""
        request._db_retried = True
        left = {LOST_CONNECTION: LOST_RETRIES, CONFLICT: CONFLICT_RETRIES}
        while True:
            if not left[kind]:
                log.warning(
                    "%s %s: still failing after its runs again (%s)", request.method, request.path, kind
                )
                return _unavailable(CONFLICTED if kind == CONFLICT else LOST)
            left[kind] -= 1
            log.warning(
                "%s %s: %s; running it again (%s, %d left)",
                request.method,
                request.path,
                str(exception).splitlines()[0] if str(exception) else type(exception).__name__,
                kind,
                left[kind],
            )
            if kind == CONFLICT:
                done = CONFLICT_RETRIES - left[kind]
                time.sleep(CONFLICT_PAUSE * 2 ** (done - 1) * random.uniform(0.5, 1.5))
            try:
                return _run(request, match)
            except (OperationalError, InterfaceError) as again:
                exception = again
                if isinstance(again, OperationalError) and transaction_conflict(again):
                    kind = CONFLICT
                    if connection.needs_rollback:
                        return _unavailable(CONFLICTED)
                elif connection_lost(again):
                    connection.close()
                    kind = LOST_CONNECTION
                else:
                    log.warning("run again of %s %s failed: %s", request.method, request.path, again)
                    return _unavailable()
                if not (_runs_again(request, match.func) or _nothing_committed(request)):
                    return _unavailable(CONFLICTED if kind == CONFLICT else LOST)
