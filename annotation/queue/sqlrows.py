"""Model instances from hand-written SQL, for the few hot-path statements the ORM makes too slow.

Building and compiling the queue's lease query through the ORM takes about 2 ms of Python per request, twenty
times what PostgreSQL spends running it (bench/queue_throughput.py). `Columns` gives the select list of one
model's concrete fields under a table alias and turns its slice of a result row back into an instance, applying
the backend's and the fields' converters as the ORM's compiler does, so the same SQL works on PostgreSQL and
SQLite and the instances are indistinguishable from ORM-loaded ones. `cursor` runs such statements as
prepared statements on PostgreSQL, so the planner's work is done once per connection, not per request.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction


class Columns:
    """The concrete fields of `model` selected under table alias `alias`."""

    def __init__(self, model, alias: str):
        self.model = model
        self.alias = alias
        self.fields = list(model._meta.concrete_fields)
        self.attnames = [f.attname for f in self.fields]
        self._pk_index = self.fields.index(model._meta.pk)
        self._converters: dict[str, list] = {}
        self._sql: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self.fields)

    def sql(self, connection) -> str:
        found = self._sql.get(connection.vendor)
        if found is None:
            qn = connection.ops.quote_name
            found = self._sql[connection.vendor] = ", ".join(
                f"{self.alias}.{qn(f.column)}" for f in self.fields
            )
        return found

    def _converters_for(self, connection) -> list:
        found = self._converters.get(connection.vendor)
        if found is None:
            found = []
            for field in self.fields:
                col = field.get_col(self.alias)
                convert = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
                found.append((col, convert))
            self._converters[connection.vendor] = found
        return found

    def build(self, connection, row: Sequence[Any], start: int = 0):
        """The instance held in `row[start:start + len(self)]`, or None when its primary key is NULL (the
        unmatched side of a LEFT JOIN)."""
        values = list(row[start : start + len(self.fields)])
        if values[self._pk_index] is None:
            return None
        for i, (col, convert) in enumerate(self._converters_for(connection)):
            value = values[i]
            for fn in convert:
                value = fn(value, col, connection)
            values[i] = value
        return self.model.from_db(connection.alias, self.attnames, values)


def prep(model, name: str, value: Any, connection) -> Any:
    """`value` as the database expects it for `model.name` (JSON, datetimes on SQLite, ...)."""
    return model._meta.get_field(name).get_db_prep_save(value, connection)


def update(
    connection, model, pk: int, values: dict[str, Any], where: dict[str, tuple[str, Any]] | None = None
):
    """`UPDATE model SET values WHERE pk = pk [AND field op value ...]`; returns the number of rows changed.

    `where` maps field names to (operator, value), e.g. {"state": ("=", "leased")}. Values go through the
    fields' own conversion, so JSON and datetimes are stored exactly as the ORM stores them."""
    qn = connection.ops.quote_name
    meta = model._meta
    assignments, params = [], []
    for name, value in values.items():
        field = meta.get_field(name)
        assignments.append(f"{qn(field.column)} = %s")
        params.append(field.get_db_prep_save(value, connection))
    conditions = [f"{qn(meta.pk.column)} = %s"]
    params.append(pk)
    for name, (op, value) in (where or {}).items():
        if op not in ("=", "<", "<=", ">", ">="):
            raise ValueError(f"unsupported operator {op!r}")
        field = meta.get_field(name)
        conditions.append(f"{qn(field.column)} {op} %s")
        params.append(field.get_db_prep_save(value, connection))
    sql = f"UPDATE {qn(meta.db_table)} SET {', '.join(assignments)} WHERE {' AND '.join(conditions)}"
    with cursor(connection) as c:
        c.execute(sql, params)
        return c.rowcount


def insert(connection, instance, *, skip_conflict: bool = False) -> bool:
    """`INSERT` `instance` (its concrete fields but the auto primary key; `pre_save` fills `auto_now_add` and
    the like, as Model.save does) and set its primary key. With `skip_conflict`, a row a unique constraint
    refuses is skipped and False returned, with no savepoint on PostgreSQL (`ON CONFLICT DO NOTHING`, one
    prepared statement); elsewhere the ORM saves it, in a savepoint when a conflict is to be skipped."""
    if connection.vendor != "postgresql":
        if not skip_conflict:
            instance.save(force_insert=True, using=connection.alias)
            return True
        try:
            with transaction.atomic(using=connection.alias):
                instance.save(force_insert=True, using=connection.alias)
        except IntegrityError:
            return False
        return True
    meta = instance._meta
    fields = _insert_fields(meta.model)
    with cursor(connection) as c:
        c.execute(
            _insert_sql(connection, meta.model, skip_conflict),
            [f.get_db_prep_save(f.pre_save(instance, add=True), connection) for f in fields],
        )
        row = c.fetchone()
    if row is None:
        return False
    setattr(instance, meta.pk.attname, row[0])
    instance._state.adding = False
    instance._state.db = connection.alias
    return True


@functools.cache
def _insert_fields(model) -> list:
    return [f for f in model._meta.concrete_fields if f is not model._meta.auto_field]


_INSERT_SQL: dict[tuple[Any, str, bool], str] = {}


def _insert_sql(connection, model, skip_conflict: bool) -> str:
    key = (model, connection.vendor, skip_conflict)
    found = _INSERT_SQL.get(key)
    if found is None:
        qn = connection.ops.quote_name
        fields = _insert_fields(model)
        found = _INSERT_SQL[key] = (
            f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))})"
            + (" ON CONFLICT DO NOTHING" if skip_conflict else "")
            + f" RETURNING {qn(model._meta.pk.column)}"
        )
    return found


def cursor(connection):
    """A cursor for the hot path's fixed statements. On PostgreSQL each distinct statement is prepared on its
    first use and reused for the life of the connection, which saves the planning (about 0.5 ms for the lease
    statement, more than it takes to run) on every later request.

    Django keeps psycopg's automatic preparation off so that transaction-mode poolers work; these statements
    are prepared explicitly instead, and `CROWDLABEL_DB_PREPARED_STATEMENTS=0` turns that off for a pooler
    that cannot keep prepared statements. Everything else Django runs stays unprepared."""
    if (
        connection.vendor != "postgresql"
        or not settings.CROWDLABEL["DB_PREPARED_STATEMENTS"]
        or connection.queries_logged  # DEBUG or a query capture: log the statement text, as Django would
    ):
        return connection.cursor()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    raw = connection.connection
    if raw.prepare_threshold is None:
        # Explicit prepare=True is ignored while the threshold is None; a threshold no statement reaches keeps
        # automatic preparation off (Django's own client-side-binding cursors never prepare anyway).
        raw.prepare_threshold = 2**31 - 1
    prepared = _preparing_cursor_class()(raw)
    return (
        connection.make_debug_cursor(prepared)
        if connection.queries_logged
        else connection.make_cursor(prepared)
    )


@functools.cache
def _preparing_cursor_class():
    import psycopg  # only on PostgreSQL

    class PreparingCursor(psycopg.Cursor):
        """Server-side binding, every statement prepared (`prepare=True`)."""

        def execute(self, query, params=None, *, prepare=None, binary=None):
            return super().execute(query, params, prepare=True, binary=binary)

    return PreparingCursor
