"""Reading settings from the environment: an unset or empty variable takes its default, a malformed one is refused
at start with `ImproperlyConfigured` naming it. Each reader takes the mapping to read (`os.environ` unless given),
so a rule about several variables can be tested without touching the process's environment."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

N = TypeVar("N", int, float)


def _raw(name: str, environ: Mapping[str, str] | None) -> str:
    return (os.environ if environ is None else environ).get(name, "").strip()


def _number(name: str, environ: Mapping[str, str] | None, parse: Callable[[str], N], kind: str) -> N | None:
    """The variable parsed by `parse`, None when unset or empty; refused naming it when malformed."""
    value = _raw(name, environ)
    if not value:
        return None
    try:
        return parse(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be {kind}, got {value!r}") from exc


def env_bool(name: str, default: bool = False, *, environ: Mapping[str, str] | None = None) -> bool:
    value = _raw(name, environ)
    return default if not value else value.lower() in {"1", "true", "yes", "on"}


def env_int(
    name: str, default: int, *, least: int | None = None, environ: Mapping[str, str] | None = None
) -> int:
    number = _number(name, environ, int, "an integer")
    if number is None:
        return default
    if least is not None and number < least:
        raise ImproperlyConfigured(f"{name} must be at least {least}, got {number}")
    return number


def env_float(
    name: str, default: float, *, positive: bool = False, environ: Mapping[str, str] | None = None
) -> float:
    number = _number(name, environ, float, "a number")
    if number is None:
        return default
    if positive and not number > 0:
        raise ImproperlyConfigured(f"{name} must be above 0, got {_raw(name, environ)!r}")
    return number
