"""The rule for text arriving from outside: no NUL characters (PostgreSQL cannot store them) and no lone UTF-16
surrogates (they cannot be encoded as UTF-8, so echoing one back in an error message would crash the response);
in JSON, no number the platform cannot hold (NaN, Infinity, a float that overflows such as 1e400, an integer
beyond 64 bits). Pure Python: the request parsers and middleware in config/ apply it to bodies, query strings
and paths."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")


def text_problem(value: str) -> str | None:
    """Why `value` is not acceptable text, or None when it is."""
    match = _BAD_TEXT.search(value)
    if match is None:
        return None
    if match.group() == "\x00":
        return "contains a NUL character"
    return "contains a lone surrogate (not valid Unicode text)"


class NestingTooDeep(ValueError):
    pass


class BadText(ValueError):
    pass


class RefusedNumber:
    """Stands in decoded JSON for a number the platform cannot hold, until `check_tree` names its field."""

    __slots__ = ("problem",)

    def __init__(self, problem: str):
        self.problem = problem


def json_float(text: str) -> float | RefusedNumber:
    """`parse_float` for json.loads."""
    value = float(text)
    return value if math.isfinite(value) else RefusedNumber(f"{text[:40]} is not a finite number")


def json_int(text: str) -> int | RefusedNumber:
    """`parse_int` for json.loads: an integer beyond 64 bits fits no column (and no id)."""
    if len(text) > 20:  # more digits than any 64-bit integer: refused before int() reads thousands of them
        return RefusedNumber(f"{text[:20]}... is out of range (-2^63 to 2^63-1)")
    value = int(text)
    if INT64_MIN <= value <= INT64_MAX:
        return value
    return RefusedNumber(f"{text} is out of range (-2^63 to 2^63-1)")


def json_constant(name: str) -> RefusedNumber:
    """`parse_constant` for json.loads: NaN, Infinity and -Infinity."""
    return RefusedNumber(f"{name} is not a finite number")


def check_tree(data: object, *, max_depth: int) -> None:
    """Walk decoded JSON without recursion: refuse nesting deeper than `max_depth` (NestingTooDeep), any key
    or string with a NUL or a lone surrogate and any number `json_float`/`json_int`/`json_constant` refused
    (BadText, naming where it was found)."""
    stack: list[tuple[object, int, str]] = [(data, 1, "")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, str):
            _check_string(value, where)
        elif isinstance(value, RefusedNumber):
            raise BadText(f"{where or 'the body'}: {value.problem}")
        elif isinstance(value, dict | list):
            if depth > max_depth:
                raise NestingTooDeep(f"JSON nested deeper than {max_depth} levels")
            items: Iterable[tuple[object, object]] = (
                value.items() if isinstance(value, dict) else enumerate(value)
            )
            for key, child in items:
                path = f"{where}.{key}" if where else str(key)
                if isinstance(key, str):  # checked before any path naming it is reported
                    _check_string(key, f"a key in {where}" if where else "a key")
                stack.append((child, depth + 1, path))


def check_strings(pairs: Iterable[tuple[str, str]]) -> None:
    """Check (name, value) pairs, such as a form's fields or a query string's parameters."""
    for name, value in pairs:
        _check_string(name, "a parameter name")
        _check_string(value, name)


def _check_string(value: str, where: str) -> None:
    problem = text_problem(value)
    if problem is not None:
        raise BadText(f"{where or 'the body'}: {problem}")
