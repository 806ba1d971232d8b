"""Model instances from hand-written SQL, for the few hot-path statements the ORM makes too slow.

Building and compiling the queue's lease query through the ORM takes about 2 ms of Python per request, twenty
times what PostgreSQL spends running it (bench/queue_throughput.py). `Columns` gives the select list of one
model's concrete fields under a table alias and turns its slice of a result row back into an instance, applying
the backend's and the fields' converters as the ORM's compiler does, so the same SQL works on PostgreSQL and
SQLite and the instances are indistinguishable from ORM-loaded ones. `cursor` runs such statements as
prepared statements on PostgreSQL, so the planner's work is done once per connection, not per request.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connections, transaction


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


def update_later(connection, model, pk: int, values: dict[str, Any]) -> None:
    """`update` without a guard and without waiting for it: inside `deferred_writes` it goes with the batch
    (see there), elsewhere it runs at once."""
    sql, params = _update_sql(connection, model, pk, values, None)
    write(connection, model._meta.db_table, sql, params)


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


def insert_later(connection, instance) -> None:
    """`insert` (no conflict expected) without waiting for it: inside `deferred_writes` it goes with the batch
    and the instance gets its primary key when the batch is sent (`deferred_send`, or a statement naming its
    table); elsewhere it runs at once."""
    if connection.vendor != "postgresql":
        instance.save(force_insert=True, using=connection.alias)
        return
    meta = instance._meta
    fields = _insert_fields(meta.model)
    qn = connection.ops.quote_name
    sql = _insert_sql(connection, meta.model, False, returning=False)
    params = [f.get_db_prep_save(f.pre_save(instance, add=True), connection) for f in fields]

    def done(_rowcount: int, pk: Any) -> None:
        setattr(instance, meta.pk.attname, pk)
        instance._state.adding = False
        instance._state.db = connection.alias

    write(connection, meta.db_table, sql, params, returning=qn(meta.pk.column), on_done=done)


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


# --- writes sent together ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Write:
    table: str
    sql: str
    params: list
    returning: str | None
    on_done: Callable[[int, Any], None] | None


# Statements that end or mark part of a transaction: the held writes must be in before them.
_TRANSACTION_CONTROL = ("SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "BEGIN")


class _Batch:
    """The writes deferred on one connection; sent as one statement before the connection runs a statement
    that names one of their tables or controls the transaction, or when the caller says so."""

    def __init__(self, connection):
        self.connection = connection
        self.pending: list[_Write] = []
        self.sending = False

    def add(self, w: _Write) -> None:
        if any(p.table == w.table for p in self.pending):
            # Two writes of one table in one statement could touch one row twice (PostgreSQL then applies only
            # one of them) or miss each other's rows: the first goes on its own.
            self.send()
        self.pending.append(w)

    def before_execute(self, execute, sql, params, many, context):
        if not self.sending and self.pending and self.seen_by(sql):
            self.send_all()
        return execute(sql, params, many, context)

    def seen_by(self, sql) -> bool:
        """Whether `sql` could see or depend on the held writes: it names one of their tables, or it is
        transaction control (a savepoint, whose rollback must undo them). A statement about other tables
        leaves them held: sending them there would lock their rows at a point the caller cannot see."""
        if not isinstance(sql, str):
            return True
        if sql.lstrip()[:9].upper().startswith(_TRANSACTION_CONTROL):
            return True
        return any(w.table in sql for w in self.pending)

    def send_all(self) -> None:
        while self.pending:  # an on_done may hold another write (a fallback)
            self.send()

    def send(self) -> None:
        writes, self.pending = self.pending, []
        if not writes:
            return
        parts, params, reads = [], [], []
        for i, w in enumerate(writes):
            parts.append(f"w{i} AS ({w.sql} RETURNING {w.returning or 1})")
            params.extend(w.params)
            reads.append(f"(SELECT count(*) FROM w{i})")
            if w.returning:
                reads.append(f"(SELECT {w.returning} FROM w{i} LIMIT 1)")
        # Each WITH part runs to completion when the select list first reads it, left to right: the writes
        # happen (and take their row locks) in the order they were made, as they would one by one.
        sql = f"WITH {', '.join(parts)} SELECT {', '.join(reads)}"
        self.sending = True
        try:
            with cursor(self.connection) as c:
                c.execute(sql, params)
                row = list(c.fetchone())
        finally:
            self.sending = False
        for w in writes:
            rowcount = row.pop(0)
            returned = row.pop(0) if w.returning else None
            if w.on_done is not None:
                w.on_done(rowcount, returned)


_BATCHES: dict[int, _Batch] = {}  # by id(connection) while a deferred_writes block is open on it


def _batch_key(connection) -> int:
    """The key of `connection`'s batch: the id of this thread's wrapper, also when the caller passes Django's
    `django.db.connection` proxy (a distinct object: keyed by its own id, a gold answer's writes missed the
    submit's batch and cost two round trips a real answer does not, which told gold apart by latency)."""
    return id(connections[connection.alias])


@contextlib.contextmanager
def deferred_writes(connection):
    """Within the block, writes made with `write` (and `update_later`, `insert_later`) on PostgreSQL are held
    and sent together, as one statement of data-modifying WITH parts, at points the caller can see: at
    `deferred_send`, at the end of the block, and just before the connection runs a statement that names one of
    their tables (a read that might see them) or a savepoint; a read of other tables leaves them held. The
    submit that closes a vote writes its question, tally, decision, final label, task and counters in one round
    trip instead of seven. Each write's `on_done(rowcount, returned)` runs once it is sent (a missing counter row
    is created there; a held insert gets its primary key there, so read it after `deferred_send`). Writes of
    one table are never sent in one statement, since the parts of one statement do not see each other's
    changes. Elsewhere (SQLite) writes run at once. Use inside the transaction they belong to; an error in the
    block drops what is held (the transaction is rolled back anyway)."""
    key = _batch_key(connection)
    if connection.vendor != "postgresql" or key in _BATCHES:
        yield
        return
    batch = _BATCHES[key] = _Batch(connection)
    try:
        with connection.execute_wrapper(batch.before_execute):
            yield
            batch.send_all()
    finally:
        del _BATCHES[key]


def deferred_send(connection) -> None:
    """Send the writes `deferred_writes` holds on this connection now (nothing when none are held)."""
    batch = _BATCHES.get(_batch_key(connection))
    if batch is not None:
        batch.send_all()


def write(
    connection,
    table: str,
    sql: str,
    params: Sequence[Any],
    *,
    returning: str | None = None,
    on_done: Callable[[int, Any], None] | None = None,
) -> None:
    """Run one INSERT/UPDATE (`sql` without a RETURNING clause) on `table`, now or, inside `deferred_writes`,
    with the batch; then `on_done(rows changed, the first row's `returning` column or None)`."""
    w = _Write(table, sql, list(params), returning, on_done)
    batch = _BATCHES.get(_batch_key(connection))
    if batch is not None:
        batch.add(w)
        return
    with cursor(connection) as c:
        if returning:
            c.execute(f"{sql} RETURNING {returning}", w.params)
            found = c.fetchone()
            rowcount, returned = c.rowcount, (found[0] if found else None)
        else:
            c.execute(sql, w.params)
            rowcount, returned = c.rowcount, None
    if on_done is not None:
        on_done(rowcount, returned)
