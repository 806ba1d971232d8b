"""Query-string parameters checked before use, else a 400 naming the parameter: ids are ASCII digits within the
database's bigint range (`str.isdigit` alone lets "²" through to `int()`), choices are one of their values."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError

ID_MAX = 2**63 - 1


def parse_id(value: str) -> int | None:
    """The id written in `value`, or None when it is not one."""
    if not (value.isascii() and value.isdigit()) or len(value) > 19:
        return None
    number = int(value)
    return number if number <= ID_MAX else None


def query_id(params, name: str) -> int | None:
    """The id in query parameter `name` (None when absent); 400 when it is not an id, an empty value included
    (`?dataset=` names no dataset: leave the parameter out for "any")."""
    value = params.get(name)
    if value is None:
        return None
    if value == "":
        raise ValidationError(
            {name: "must be an id (a non-negative integer); leave the parameter out for none"}
        )
    number = parse_id(value)
    if number is None:
        raise ValidationError({name: "must be an id (a non-negative integer)"})
    return number


def query_bounded(params, name: str, lo: int, hi: int) -> int | None:
    """The integer in query parameter `name` (None when absent), from `lo` to `hi`; 400 naming the parameter
    for anything else (an empty value included)."""
    value = params.get(name)
    if value is None:
        return None
    number = parse_id(value)
    if number is None or not lo <= number <= hi:
        raise ValidationError({name: f"must be an integer from {lo} to {hi}"})
    return number


def query_id_list(params, name: str) -> list[int]:
    """Comma-separated ids in query parameter `name`; 400 when any is not an id."""
    parts = [p for p in params.get(name, "").split(",") if p]
    numbers = [parse_id(p) for p in parts]
    if any(n is None for n in numbers):
        raise ValidationError({name: "must be comma-separated ids"})
    return [n for n in numbers if n is not None]


def query_flag(params, name: str) -> bool:
    """Query parameter `name` as a flag: true or false (absent or empty: false); 400 for anything else."""
    value = params.get(name, "")
    if value not in ("", "true", "false"):
        raise ValidationError({name: "must be true or false"})
    return value == "true"


def query_choice(params, name: str, choices) -> str | None:
    """The value of query parameter `name` (None when absent or empty); 400 unless it is one of `choices`."""
    value = params.get(name)
    if not value:
        return None
    if value not in choices:
        raise ValidationError({name: f"must be one of {', '.join(choices)}"})
    return value
