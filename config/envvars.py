"""Reading settings from the environment: an unset or empty variable takes its default, a malformed one is refused
at start with `ImproperlyConfigured` naming it. Each reader takes the mapping to read (`os.environ` unless given),
so a rule about several variables can be tested without touching the process's environment."""

from __future__ import annotations

import os
from collections.abc import Mapping

from django.core.exceptions import ImproperlyConfigured


def _raw(name: str, environ: Mapping[str, str] | None) -> str:
    return (os.environ if environ is None else environ).get(name, "").strip()


def env_bool(name: str, default: bool = False, *, environ: Mapping[str, str] | None = None) -> bool:
    value = _raw(name, environ)
    return default if not value else value.lower() in {"1", "true", "yes", "on"}


def env_int(
    name: str, default: int, *, least: int | None = None, environ: Mapping[str, str] | None = None
) -> int:
    value = _raw(name, environ)
    if not value:
        return default
    try:
        number = int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from exc
    if least is not None and number < least:
        raise ImproperlyConfigured(f"{name} must be at least {least}, got {number}")
    return number


def env_float(
    name: str, default: float, *, positive: bool = False, environ: Mapping[str, str] | None = None
) -> float:
    value = _raw(name, environ)
    if not value:
        return default
    try:
        number = float(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from exc
    if positive and not number > 0:
        raise ImproperlyConfigured(f"{name} must be above 0, got {value!r}")
    return number
