"""The PostgreSQL backend with a health check that costs no round trip (config/dbconnection.py has the rest).

Django's `CONN_HEALTH_CHECKS` runs `SELECT 1` before the first query of every request on a reused connection:
one round trip per request, about a tenth of the worker hot path's (bench/load.py). A server that ends a
backend (pg_terminate_backend, a restart, an administrator) sends it an error message and closes the socket,
so an idle connection that has anything to read is one that is going away; one with nothing to read and a good
libpq status is alive. Only when something is waiting is the full `SELECT 1` check run (a rare NOTICE or
parameter change passes it). A connection lost after the check is config.dbconnection's, as before.

With Django's pool (`DB_POOL=1`, config/dbpool.py) the same check is made on each connection the pool hands
out, instead of psycopg_pool's own check, which sends an empty statement every time (the settings turn that
one off); a dead one is closed, given back (the pool opens a replacement) and another taken.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg import pq


def _nothing_to_read(raw) -> bool | None:
    """Whether an open connection is idle with nothing waiting on its socket: True alive, False dead, None when
    only a statement can tell (inside a transaction, a bad libpq status, or something to read)."""
    if raw is None or raw.closed or raw.broken:
        return False
    pgconn = raw.pgconn
    if pgconn.status != pq.ConnStatus.OK or pgconn.transaction_status != pq.TransactionStatus.IDLE:
        return None
    try:
        readable, _, _ = select.select([pgconn.socket], [], [], 0)
    except (OSError, ValueError):
        return False
    return None if readable else True


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        alive = _nothing_to_read(self.connection)
        return super().is_usable() if alive is None else alive

    def get_new_connection(self, conn_params):
        raw = super().get_new_connection(conn_params)
        pool = self.pool
        if pool is None:
            return raw
        # Every connection the pool holds may be dead (all backends killed): one more try than it can hold, then
        # the last one is used as it is and a loss during the request is config.dbconnection's.
        for _ in range(pool.max_size):
            alive = _nothing_to_read(raw)
            if alive is None:
                try:
                    raw.execute("")  # what psycopg_pool's own check sends
                    alive = True
                except self.Database.Error:
                    alive = False
            if alive:
                return raw
            raw.close()
            pool.putconn(raw)  # a closed connection: the pool drops it and opens a replacement
            raw = super().get_new_connection(conn_params)
        return raw
