"""How a process holds its PostgreSQL connections: persistent ones (`DB_CONN_MAX_AGE`, the default) or Django's
psycopg pool (`DB_POOL=1`), read from the environment and refused at start when they cannot work together
(docs/deployment.md, *Database connections*)."""

from __future__ import annotations

from collections.abc import Mapping

from django.core.exceptions import ImproperlyConfigured

PERSISTENT_MAX_AGE = 60  # seconds a persistent connection is kept when DB_CONN_MAX_AGE is unset


def _integer(environ: Mapping[str, str], name: str, default: int, least: int) -> int:
    value = environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from exc
    if number < least:
        raise ImproperlyConfigured(f"{name} must be at least {least}, got {number}")
    return number


def _seconds(environ: Mapping[str, str], name: str, default: float) -> float:
    value = environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number of seconds, got {value!r}") from exc
    if not number > 0:
        raise ImproperlyConfigured(f"{name} must be above 0 seconds, got {value!r}")
    return number


def pool_on(environ: Mapping[str, str]) -> bool:
    """Whether `DB_POOL` asks for the pool."""
    return environ.get("DB_POOL", "").strip().lower() in {"1", "true", "yes", "on"}


def conn_max_age(environ: Mapping[str, str]) -> int:
    """Seconds Django keeps a connection between requests: 0 with the pool, which holds them instead (Django
    refuses a pool beside persistent connections, so a nonzero `DB_CONN_MAX_AGE` with `DB_POOL=1` is refused
    here, by name, before anything connects)."""
    if not pool_on(environ):
        return _integer(environ, "DB_CONN_MAX_AGE", PERSISTENT_MAX_AGE, least=0)
    age = _integer(environ, "DB_CONN_MAX_AGE", 0, least=0)
    if age:
        raise ImproperlyConfigured(
            f"DB_POOL=1 keeps connections in the pool, so DB_CONN_MAX_AGE must be 0 or unset (got {age}); "
            "refusing to start. Choose one: the pool, or persistent connections without it."
        )
    return 0


def pool_options(environ: Mapping[str, str], engine: str) -> dict | None:
    """psycopg_pool's options for `DATABASES["default"]["OPTIONS"]["pool"]`, or None without `DB_POOL=1`.

    Only PostgreSQL has the pool: asked for on SQLite (most likely a forgotten `DATABASE_URL`) it is refused,
    not ignored, so a deployment never runs on a database it did not mean to. Sizes are per process, and the
    pool grows towards the maximum while a request waits for a connection (after a killed backend, say): a sync
    gunicorn worker, one request at a time, wants a maximum of 1; a threaded one as many as its threads."""
    if not pool_on(environ):
        return None
    if not engine.endswith("postgresql"):
        raise ImproperlyConfigured(
            "DB_POOL=1 is Django's psycopg pool, which only PostgreSQL has, but the database is "
            f"{engine.rsplit('.', 1)[-1]}; refusing to start. Set DATABASE_URL to a postgres:// URL, or unset DB_POOL."
        )
    min_size = _integer(environ, "DB_POOL_MIN_SIZE", 1, least=0)
    max_size = _integer(environ, "DB_POOL_MAX_SIZE", max(4, min_size), least=1)
    if max_size < min_size:
        raise ImproperlyConfigured(
            f"DB_POOL_MAX_SIZE ({max_size}) must be at least DB_POOL_MIN_SIZE ({min_size}); refusing to start."
        )
    # timeout: how long a request waits for a free connection before failing (then 503, config/dbconnection.py).
    return {"min_size": min_size, "max_size": max_size, "timeout": _seconds(environ, "DB_POOL_TIMEOUT", 10.0)}
