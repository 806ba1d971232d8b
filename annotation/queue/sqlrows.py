"""Model instances from hand-written SQL, for the few hot-path statements the ORM makes too slow.

Building and compiling the queue's lease query through the ORM takes about 2 ms of Python per request, twenty
times what PostgreSQL spends running it (bench/queue_throughput.py). `Columns` gives the select list of one
model's concrete fields under a table alias and turns its slice of a result row back into an instance, applying
the backend's and the fields' converters as the ORM's compiler does, so the same SQL works on PostgreSQL and
SQLite and the instances are indistinguishable from ORM-loaded ones. `cursor` runs such statements as
prepared statements on PostgreSQL, so the planner's work is done once per connection, not per request.
`Writes` holds a submit's writes and sends them together (one statement on PostgreSQL) where its caller says.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
    sql, params = _update_sql(connection, model, pk, values, where)
    with cursor(connection) as c:
        c.execute(sql, params)
        return c.rowcount


def _update_sql(connection, model, pk, values, where) -> tuple[str, list]:
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
    return f"UPDATE {qn(meta.db_table)} SET {', '.join(assignments)} WHERE {' AND '.join(conditions)}", params


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


_INSERT_SQL: dict[tuple[Any, str, bool, bool], str] = {}


def _insert_sql(connection, model, skip_conflict: bool, returning: bool = True) -> str:
    key = (model, connection.vendor, skip_conflict, returning)
    found = _INSERT_SQL.get(key)
    if found is None:
        qn = connection.ops.quote_name
        fields = _insert_fields(model)
        found = _INSERT_SQL[key] = (
            f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))})"
            + (" ON CONFLICT DO NOTHING" if skip_conflict else "")
            + (f" RETURNING {qn(model._meta.pk.column)}" if returning else "")
        )
    return found


def cursor(connection):
    """A cursor for the hot path's fixed statements. On PostgreSQL each distinct statement is prepared on its
    first use and reused for the life of the connection, which saves the planning (about 0.5 ms for the lease
    statement, more than it takes to run) on every later request.

    Django keeps psycopg's automatic preparation off so that transaction-mode poolers work; these statements
    are prepared explicitly instead, and `CROWDLABEL_DB_PREPARED_STATEMENTS=0` turns that off for a pooler
    that cannot keep prepared statements. Django's own pool (`DB_POOL=1`) can: it hands out whole sessions, so
    a statement prepared on a pooled connection serves every later checkout of it. Everything else Django runs
    stays unprepared."""
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


# --- writes sent together at one point the caller names ------------------------------------------------


@dataclass(slots=True)
class _Write:
    table: str
    sql: str
    params: list
    returning: str | None
    on_done: Callable[[int, Any], None] | None
    instead: Callable[[], None] | None = None  # what runs in its place outside PostgreSQL


class Writes:
    """INSERTs and UPDATEs a caller collects and sends at one point of its own: `send()`. Nothing is sent
    before that, whatever runs in between, so a read made meanwhile does not see them: a caller whose read
    needs them sends first, where the reader can see it. The submit that closes a vote writes its question,
    decision, final label, task and counters in one round trip instead of seven
    (`annotation.queue.services.assignment_submit` makes one and sends it before the next lease).

    On PostgreSQL `send()` runs them as one statement of data-modifying WITH parts, in the order they were
    made; the parts of one statement do not see each other's changes, so a write of a table already in that
    statement starts the next one. Elsewhere (SQLite) they run one by one. Each write's
    `on_done(rows changed, the first row's `returning` column or None)` runs once it is sent (a missing counter
    row is created there; an insert's instance gets its primary key there). Use as a context manager inside
    the transaction the writes belong to: leaving the block normally with writes unsent is an error (they
    would be lost); an error in the block drops them (the transaction is rolled back anyway). A write is made
    at the transaction level the object was made at: inside a savepoint opened since, it is refused, since
    rolling that savepoint back could not undo it."""

    def __init__(self, connection):
        self.connection = connection
        self.pending: list[_Write] = []
        self._level = len(connection.savepoint_ids)

    def __enter__(self) -> Writes:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None and self.pending:
            tables = ", ".join(w.table for w in self.pending)
            self.pending = []
            raise RuntimeError(f"writes of {tables} were made but never sent")
        self.pending = []

    def add(
        self,
        table: str,
        sql: str,
        params: Sequence[Any],
        *,
        returning: str | None = None,
        on_done: Callable[[int, Any], None] | None = None,
    ) -> None:
        """Hold one INSERT/UPDATE (`sql` without a RETURNING clause) of `table` until `send()`."""
        self._hold(_Write(table, sql, list(params), returning, on_done))

    def _hold(self, w: _Write) -> None:
        if any(sid is not None for sid in self.connection.savepoint_ids[self._level :]):
            raise RuntimeError(f"a write of {w.table} held from inside a savepoint opened after its Writes")
        self.pending.append(w)

    def update(self, model, pk: int, values: dict[str, Any]) -> None:
        """`update` without a guard, held until `send()`."""
        sql, params = _update_sql(self.connection, model, pk, values, None)
        self.add(model._meta.db_table, sql, params)

    def insert(self, instance) -> None:
        """`insert` (no conflict expected), held until `send()`: the instance gets its primary key then
        (`pre_save`, which fills `auto_now_add` and the like, runs now)."""
        connection = self.connection
        meta = instance._meta
        if connection.vendor != "postgresql":
            # As `insert` does there: the ORM saves it.
            save = lambda: instance.save(force_insert=True, using=connection.alias)  # noqa: E731
            self._hold(_Write(meta.db_table, "", [], None, None, instead=save))
            return
        fields = _insert_fields(meta.model)

        def done(_rowcount: int, pk: Any) -> None:
            setattr(instance, meta.pk.attname, pk)
            instance._state.adding = False
            instance._state.db = connection.alias

        self.add(
            meta.db_table,
            _insert_sql(connection, meta.model, False, returning=False),
            [f.get_db_prep_save(f.pre_save(instance, add=True), connection) for f in fields],
            returning=connection.ops.quote_name(meta.pk.column),
            on_done=done,
        )

    def send(self) -> None:
        """Send what is held (nothing when nothing is), then run the writes' `on_done`."""
        while self.pending:  # an on_done may hold another write (none does today; it would go next)
            writes, self.pending = self.pending, []
            if self.connection.vendor != "postgresql":
                for w in writes:
                    if w.instead is not None:
                        w.instead()
                    else:
                        _write_now(self.connection, w)
                continue
            statement: list[_Write] = []
            for w in writes:
                if any(p.table == w.table for p in statement):
                    _send_one_statement(self.connection, statement)
                    statement = []
                statement.append(w)
            _send_one_statement(self.connection, statement)


def _send_one_statement(connection, writes: list[_Write]) -> None:
    parts, params, reads = [], [], []
    for i, w in enumerate(writes):
        parts.append(f"w{i} AS ({w.sql} RETURNING {w.returning or 1})")
        params.extend(w.params)
        reads.append(f"(SELECT count(*) FROM w{i})")
        if w.returning:
            reads.append(f"(SELECT {w.returning} FROM w{i} LIMIT 1)")
    # Each WITH part runs to completion when the select list first reads it, left to right: the writes happen
    # (and take their row locks) in the order they were made, as they would one by one.
    with cursor(connection) as c:
        c.execute(f"WITH {', '.join(parts)} SELECT {', '.join(reads)}", params)
        row = list(c.fetchone())
    for w in writes:
        rowcount = row.pop(0)
        returned = row.pop(0) if w.returning else None
        if w.on_done is not None:
            w.on_done(rowcount, returned)


def write(
    connection,
    table: str,
    sql: str,
    params: Sequence[Any],
    *,
    writes: Writes | None,
    returning: str | None = None,
    on_done: Callable[[int, Any], None] | None = None,
) -> None:
    """One INSERT/UPDATE (`sql` without a RETURNING clause) of `table`: held in `writes` until its `send()`,
    or run now when there is none; then `on_done(rows changed, the first row's `returning` column or None)`."""
    if writes is not None:
        writes.add(table, sql, params, returning=returning, on_done=on_done)
        return
    _write_now(connection, _Write(table, sql, list(params), returning, on_done))


def _write_now(connection, w: _Write) -> None:
    with cursor(connection) as c:
        if w.returning:
            c.execute(f"{w.sql} RETURNING {w.returning}", w.params)
            found = c.fetchone()
            rowcount, returned = c.rowcount, (found[0] if found else None)
        else:
            c.execute(w.sql, w.params)
            rowcount, returned = c.rowcount, None
    if w.on_done is not None:
        w.on_done(rowcount, returned)
