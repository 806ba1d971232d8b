"""API token authentication that loads the caller's worker identity together with the user."""

from __future__ import annotations

import functools

from django.contrib.auth import get_user_model
from django.db import connections
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from config import sqlrows

from .models import Worker


@functools.cache
def _columns() -> tuple[sqlrows.Columns, sqlrows.Columns, sqlrows.Columns]:
    from rest_framework.authtoken.models import Token

    return sqlrows.Columns(Token, "k"), sqlrows.Columns(get_user_model(), "u"), sqlrows.Columns(Worker, "w")


class WorkerTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, plus the user's `worker` in the same query: every worker endpoint reads
    `request.user.worker`, which would otherwise cost a second query on each request. The statement is written
    by hand because it runs on every API call and the ORM took longer to build it than the database to answer."""

    def authenticate_credentials(self, key):
        token_cols, user_cols, worker_cols = _columns()
        connection = connections[token_cols.model.objects.db]
        qn = connection.ops.quote_name
        sql = (
            f"SELECT {token_cols.sql(connection)}, {user_cols.sql(connection)}, {worker_cols.sql(connection)} "
            f"FROM {qn(token_cols.model._meta.db_table)} k "
            f"JOIN {qn(user_cols.model._meta.db_table)} u ON u.id = k.user_id "
            f"LEFT JOIN {qn(Worker._meta.db_table)} w ON w.user_id = u.id WHERE k.key = %s"
        )
        with sqlrows.cursor(connection) as cursor:
            cursor.execute(sql, [key])
            row = cursor.fetchone()
        if row is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        token = token_cols.build(connection, row)
        user = user_cols.build(connection, row, len(token_cols))
        worker = worker_cols.build(connection, row, len(token_cols) + len(user_cols))
        if worker is not None:
            worker.user = user
            user.worker = worker  # the reverse one-to-one cache: no query for request.user.worker
        else:
            Worker.user.field.remote_field.set_cached_value(user, None)  # no worker: known, not queried
        token.user = user
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (user, token)
