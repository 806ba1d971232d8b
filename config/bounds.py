"""The range each integer column holds on every database we run (PostgreSQL's, the narrowest: SQLite stores 64
bits anywhere), so a serializer refuses with a 400 naming the field what the database would answer with a 500.
What the JSON parser accepts at all (finite numbers, integers within 64 bits) is config/textcheck.py's."""

from __future__ import annotations

from django.db import models
from django.db.backends.base.operations import BaseDatabaseOperations
from rest_framework import serializers

from config.textcheck import INT64_MAX, INT64_MIN

__all__ = ["INT64_MAX", "INT64_MIN", "ColumnBoundsMixin", "bounded_integer", "column_range", "id_integer"]
# Django's portable ranges by field type (IntegerField: 32 bits, BigIntegerField: 64, Positive*: from 0).
COLUMN_RANGES: dict[str, tuple[int, int]] = dict(BaseDatabaseOperations.integer_field_ranges)


def column_range(model_field: models.Field) -> tuple[int, int] | None:
    """The range an integer column holds on every supported database, or None for a field that is not one."""
    return COLUMN_RANGES.get(model_field.get_internal_type())


def _narrowed(lo: int, hi: int, min_value: int | None, max_value: int | None) -> dict[str, int]:
    return {
        "min_value": lo if min_value is None else max(lo, min_value),
        "max_value": hi if max_value is None else min(hi, max_value),
    }


def bounded_integer(
    model: type[models.Model], field_name: str, *, min_value=None, max_value=None, **kwargs
) -> serializers.IntegerField:
    """A serializer integer for `model.field_name`, bounded by its column (and tighter bounds if given)."""
    found = column_range(model._meta.get_field(field_name))
    if found is None:
        raise ValueError(f"{model.__name__}.{field_name} is not an integer column")
    return serializers.IntegerField(**_narrowed(*found, min_value, max_value), **kwargs)


def id_integer(**kwargs) -> serializers.IntegerField:
    """A row id given as a plain integer (ids are 64-bit auto fields)."""
    return serializers.IntegerField(min_value=1, max_value=INT64_MAX, **kwargs)


class ColumnBoundsMixin:
    """For a ModelSerializer: every integer field built from a model column is bounded by the column's portable
    range (DRF takes the bounds from the connection's validators, which on SQLite allow 64 bits everywhere)."""

    def build_standard_field(self, field_name, model_field):
        field_class, kwargs = super().build_standard_field(field_name, model_field)
        found = column_range(model_field)
        if found is not None and issubclass(field_class, serializers.IntegerField):
            kwargs.update(_narrowed(*found, kwargs.get("min_value"), kwargs.get("max_value")))
        return field_class, kwargs
