"""The PostgreSQL health check between requests costs no round trip (config/postgresql/base.py): a live idle
connection passes it without sending a statement, a connection whose backend the server ended fails it, and a
connection inside a transaction still gets the full `SELECT 1` check."""

from __future__ import annotations

import select
import time

import psycopg
import pytest
from django.db import connection, connections, transaction
from django.db.backends.postgresql.base import DatabaseWrapper as DjangoPostgreSQL

from config.postgresql.base import DatabaseWrapper
from tests.config.test_celery_worker import database_url_of_the_test_database

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def last_statement_of(pid: int) -> str:
    """What the backend last ran, as another connection sees it (pg_stat_activity)."""
    with psycopg.connect(database_url_of_the_test_database(), autocommit=True) as admin:
        return admin.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0]


def test_the_configured_engine_is_django_postgresql_with_the_local_health_check():
    assert isinstance(connections["default"], DatabaseWrapper)
    assert issubclass(DatabaseWrapper, DjangoPostgreSQL)
    assert connection.settings_dict["CONN_HEALTH_CHECKS"] is True


def test_a_live_idle_connection_passes_the_health_check_without_sending_a_statement():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'marker-before-the-check'")
    pid = connection.connection.info.backend_pid
    assert connection.is_usable() is True
    assert last_statement_of(pid) == "SELECT 'marker-before-the-check'"


def wait_until_readable(sock: int, seconds: float) -> bool:
    """The server's goodbye reaches the socket: pg_terminate_backend only signals the backend, which then
    writes its error and exits when the (possibly busy) machine schedules it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], 0.05)
        if readable:
            return True
    return False


def test_a_connection_whose_backend_was_terminated_fails_the_health_check():
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    try:
        with psycopg.connect(database_url_of_the_test_database(), autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0] is True
        assert wait_until_readable(connection.connection.pgconn.socket, seconds=120)
        assert connection.is_usable() is False
    finally:
        # Whatever happened above, the dead connection must not outlive this test: every later test in
        # the process would otherwise fail with "the connection is closed".
        connection.close()
    with connection.cursor() as cursor:  # Django then opens a fresh one
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def test_a_connection_inside_a_transaction_gets_the_full_check():
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT 'marker-in-a-transaction'")
        pid = connection.connection.info.backend_pid
        assert connection.is_usable() is True
        assert last_statement_of(pid) == "SELECT 1"
