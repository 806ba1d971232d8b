"""The PostgreSQL backend with a health check that costs no round trip (config/dbconnection.py has the rest).

Django's `CONN_HEALTH_CHECKS` runs `SELECT 1` before the first query of every request on a reused connection:
one round trip per request, about a tenth of the worker hot path's (bench/load.py). A server that ends a
backend (pg_terminate_backend, a restart, an administrator) sends it an error message and closes the socket,
so an idle connection that has anything to read is one that is going away; one with nothing to read and a good
libpq status is alive. Only when something is waiting is the full `SELECT 1` check run (a rare NOTICE or
parameter change passes it). A connection lost after the check is config.dbconnection's, as before.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg import pq


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        raw = self.connection
        if raw is None or raw.closed or raw.broken:
            return False
        pgconn = raw.pgconn
        if pgconn.status != pq.ConnStatus.OK or pgconn.transaction_status != pq.TransactionStatus.IDLE:
            return super().is_usable()
        try:
            readable, _, _ = select.select([pgconn.socket], [], [], 0)
        except (OSError, ValueError):
            return False
        return super().is_usable() if readable else True
