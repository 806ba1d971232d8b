"""Model instances from hand-written SQL, for the few hot-path statements the ORM makes too slow.

Building and compiling the queue's lease query through the ORM takes about 2 ms of Python per request, twenty
times what PostgreSQL spends running it (bench/queue_throughput.py). `Columns` gives the select list of one
model's concrete fields under a table alias and turns its slice of a result row back into an instance, applying
the backend's and the fields' converters as the ORM's compiler does, so the same SQL works on PostgreSQL and
SQLite and the instances are indistinguishable from ORM-loaded ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class Columns:
    """The concrete fields of `model` selected under table alias `alias`."""

    def __init__(self, model, alias: str):
        self.model = model
        self.alias = alias
        self.fields = list(model._meta.concrete_fields)
        self.attnames = [f.attname for f in self.fields]
        self._pk_index = self.fields.index(model._meta.pk)
        self._converters: dict[str, list] = {}

    def __len__(self) -> int:
        return len(self.fields)

    def sql(self, connection) -> str:
        qn = connection.ops.quote_name
        return ", ".join(f"{self.alias}.{qn(f.column)}" for f in self.fields)

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
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
