"""How a process holds its PostgreSQL connections: persistent ones (`DB_CONN_MAX_AGE`, the default) or Django's
psycopg pool (`DB_POOL=1`), read from the environment and refused at start when they cannot work together
(docs/deployment.md, *Database connections*)."""

from __future__ import annotations

from collections.abc import Mapping

from django.core.exceptions import ImproperlyConfigured

from config.envvars import env_bool, env_float, env_int

PERSISTENT_MAX_AGE = 60  # seconds a persistent connection is kept when DB_CONN_MAX_AGE is unset


def pool_on(environ: Mapping[str, str]) -> bool:
    """Whether `DB_POOL` asks for the pool."""
    return env_bool("DB_POOL", environ=environ)


def conn_max_age(environ: Mapping[str, str]) -> int:
    """Seconds Django keeps a connection between requests: 0 with the pool, which holds them instead (Django
    refuses a pool beside persistent connections, so a nonzero `DB_CONN_MAX_AGE` with `DB_POOL=1` is refused
    here, by name, before anything connects)."""
    if not pool_on(environ):
        return env_int("DB_CONN_MAX_AGE", PERSISTENT_MAX_AGE, least=0, environ=environ)
    age = env_int("DB_CONN_MAX_AGE", 0, least=0, environ=environ)
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
    min_size = env_int("DB_POOL_MIN_SIZE", 1, least=0, environ=environ)
    max_size = env_int("DB_POOL_MAX_SIZE", max(4, min_size), least=1, environ=environ)
    if max_size < min_size:
        raise ImproperlyConfigured(
            f"DB_POOL_MAX_SIZE ({max_size}) must be at least DB_POOL_MIN_SIZE ({min_size}); refusing to start."
        )
    # timeout: how long a request waits for a free connection before failing (then 503, config/dbconnection.py).
    return {
        "min_size": min_size,
        "max_size": max_size,
        "timeout": env_float("DB_POOL_TIMEOUT", 10.0, positive=True, environ=environ),
    }
