"""`DB_POOL=1` turns on Django's psycopg pool instead of persistent connections (config/dbpool.py): its options
are read from the environment, a pool beside a nonzero DB_CONN_MAX_AGE or on SQLite is refused at start, and
on PostgreSQL a pooled connection keeps the hot path's prepared statements from one checkout to the next."""

from __future__ import annotations

import json

import psycopg
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from config import dbpool
from config.postgresql.base import DatabaseWrapper
from tests.config.conftest import clean_env, run
from tests.config.test_celery_worker import database_url_of_the_test_database
from tests.config.test_pg_health_check import last_statement_of, wait_until_readable

POSTGRESQL = "config.postgresql"


def test_without_db_pool_connections_persist_for_a_minute_or_db_conn_max_age():
    assert dbpool.conn_max_age({}) == 60
    assert dbpool.conn_max_age({"DB_CONN_MAX_AGE": "600"}) == 600
    assert dbpool.pool_options({}, POSTGRESQL) is None
    assert dbpool.pool_options({"DB_POOL": "0", "DB_POOL_MAX_SIZE": "8"}, POSTGRESQL) is None


def test_db_pool_gives_the_pool_its_sizes_and_timeout_and_django_no_persistent_connections():
    env = {"DB_POOL": "1", "DB_POOL_MIN_SIZE": "2", "DB_POOL_MAX_SIZE": "8", "DB_POOL_TIMEOUT": "2.5"}
    assert dbpool.conn_max_age(env) == 0
    assert dbpool.pool_options(env, POSTGRESQL) == {"min_size": 2, "max_size": 8, "timeout": 2.5}
    assert dbpool.pool_options({"DB_POOL": "yes"}, POSTGRESQL) == {
        "min_size": 1,
        "max_size": 4,
        "timeout": 10.0,
    }
    # A minimum above the default maximum raises the maximum with it.
    assert dbpool.pool_options({"DB_POOL": "1", "DB_POOL_MIN_SIZE": "6"}, POSTGRESQL)["max_size"] == 6


def test_db_pool_beside_a_nonzero_db_conn_max_age_is_refused_by_name():
    assert dbpool.conn_max_age({"DB_POOL": "1", "DB_CONN_MAX_AGE": "0"}) == 0
    with pytest.raises(ImproperlyConfigured, match="DB_POOL=1 .* DB_CONN_MAX_AGE must be 0 or unset"):
        dbpool.conn_max_age({"DB_POOL": "1", "DB_CONN_MAX_AGE": "60"})


def test_db_pool_on_sqlite_is_refused_not_ignored():
    with pytest.raises(ImproperlyConfigured, match="only PostgreSQL has.*DATABASE_URL"):
        dbpool.pool_options({"DB_POOL": "1"}, "sqlite3")
    with pytest.raises(ImproperlyConfigured, match="only PostgreSQL"):
        dbpool.pool_options({"DB_POOL": "1"}, "django.db.backends.mysql")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DB_POOL_MIN_SIZE": "4", "DB_POOL_MAX_SIZE": "2"}, "DB_POOL_MAX_SIZE \\(2\\) must be at least"),
        ({"DB_POOL_MAX_SIZE": "0"}, "DB_POOL_MAX_SIZE must be at least 1"),
        ({"DB_POOL_MIN_SIZE": "-1"}, "DB_POOL_MIN_SIZE must be at least 0"),
        ({"DB_POOL_MAX_SIZE": "many"}, "DB_POOL_MAX_SIZE must be an integer"),
        ({"DB_POOL_TIMEOUT": "0"}, "DB_POOL_TIMEOUT must be above 0"),
        ({"DB_POOL_TIMEOUT": "soon"}, "DB_POOL_TIMEOUT must be a number"),
    ],
)
def test_malformed_pool_settings_are_refused_naming_the_variable(env, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        dbpool.pool_options({"DB_POOL": "1", **env}, POSTGRESQL)


PRINT_DATABASE = """
import json, os
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
from django.conf import settings
db = settings.DATABASES["default"]
print(json.dumps({"engine": db["ENGINE"], "max_age": db["CONN_MAX_AGE"], "checks": db["CONN_HEALTH_CHECKS"],
                  "pool": db.get("OPTIONS", {}).get("pool")}))
"""
URL = "postgres://crowdlabel@db.invalid:5432/crowdlabel"  # settings only: nothing connects


def test_the_settings_turn_the_pool_on_for_postgresql_with_health_checks(var_dir):
    result = run(
        ["-c", PRINT_DATABASE], clean_env(var_dir, DATABASE_URL=URL, DB_POOL="1", DB_POOL_MAX_SIZE="3")
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "engine": POSTGRESQL,
        "max_age": 0,
        "checks": False,  # not psycopg_pool's round trip: config.postgresql checks what the pool hands out
        "pool": {"min_size": 1, "max_size": 3, "timeout": 10.0},
    }
    result = run(["-c", PRINT_DATABASE], clean_env(var_dir, DATABASE_URL=URL))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"engine": POSTGRESQL, "max_age": 60, "checks": True, "pool": None}


@pytest.mark.parametrize(
    "env",
    [
        {"DATABASE_URL": URL, "DB_POOL": "1", "DB_CONN_MAX_AGE": "60"},
        {"DB_POOL": "1"},  # no DATABASE_URL: SQLite
    ],
)
def test_manage_py_refuses_to_start_with_a_pool_that_cannot_work(var_dir, env):
    result = run(["manage.py", "check"], clean_env(var_dir, **env))
    assert result.returncode != 0
    assert "DB_POOL=1" in result.stderr and "refusing to start" in result.stderr


# --- PostgreSQL: a pooled connection and the hot path's prepared statements --------------------------------


def pooled_wrapper(alias: str) -> DatabaseWrapper:
    """A second Django connection to the test database through a pool of one connection, as DB_POOL=1 sets
    it up (CONN_MAX_AGE 0, no psycopg_pool check)."""
    settings_dict = {
        **connection.settings_dict,
        "CONN_MAX_AGE": 0,
        "CONN_HEALTH_CHECKS": False,
        "OPTIONS": {**connection.settings_dict["OPTIONS"], "pool": {"min_size": 1, "max_size": 1}},
    }
    return DatabaseWrapper(settings_dict, alias=alias)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_pooled_connection_keeps_the_hot_path_statements_prepared_between_checkouts():
    from annotation.queue import sqlrows

    pooled = pooled_wrapper("pooled-prepared")
    try:
        statement = "SELECT count(*) FROM annotation_task WHERE id > %s"
        with sqlrows.cursor(pooled) as cursor:
            cursor.execute(statement, [0])
            first_pid = pooled.connection.info.backend_pid
        pooled.close()  # back to the pool, as at the end of a request
        assert pooled.connection is None
        with sqlrows.cursor(pooled) as cursor:  # the next request: the same (only) connection
            raw = pooled.connection
            assert raw.info.backend_pid == first_pid
            cursor.execute(statement, [0])  # runs the statement prepared at the first checkout
            assert cursor.fetchone()[0] >= 0
        # Asked unprepared, on the same session: the statement was prepared once, not once per checkout.
        held = raw.execute("SELECT statement FROM pg_prepared_statements").fetchall()
        assert held == [("SELECT count(*) FROM annotation_task WHERE id > $1",)]
        pooled.close()
    finally:
        pooled.close_pool()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_pool_hands_out_a_live_connection_without_a_statement_and_replaces_a_killed_one():
    pooled = pooled_wrapper("pooled-killed")
    try:
        with pooled.cursor() as cursor:
            cursor.execute("SELECT 'marker-before-the-checkout'")
        pid = pooled.connection.info.backend_pid
        pooled.close()
        pooled.ensure_connection()  # checked as it is handed out: alive, and no statement sent for it
        assert pooled.connection.info.backend_pid == pid
        assert last_statement_of(pid) == "SELECT 'marker-before-the-checkout'"
        socket = pooled.connection.pgconn.socket
        pooled.close()

        with psycopg.connect(database_url_of_the_test_database(), autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0] is True
        assert wait_until_readable(socket, seconds=120)  # the server's goodbye reached the idle connection
        with pooled.cursor() as cursor:  # the next request: a fresh backend, not an error
            cursor.execute("SELECT pg_backend_pid()")
            assert cursor.fetchone()[0] != pid
        pooled.close()
    finally:
        pooled.close_pool()
