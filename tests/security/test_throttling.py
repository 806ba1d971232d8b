"""Brute force is slowed to a crawl: sign-in lockout with back-off per account and per address on the login page,
the admin login and token endpoints; API rate limits per role with 429 and Retry-After."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.test import RequestFactory
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.request import Request
from rest_framework.test import APIClient

from config import login_throttle
from config.login_throttle import lock_seconds
from config.throttling import RoleRateThrottle
from tests import factories
from tests.conftest import client_for

PASSWORD = "pass-for-tests-123"


@pytest.fixture
def lockout(settings):
    settings.CROWDLABEL = {
        **settings.CROWDLABEL,
        "LOGIN_FREE_ATTEMPTS_ACCOUNT": 5,
        "LOGIN_FREE_ATTEMPTS_ADDRESS": 20,
        "LOGIN_LOCK_BASE_SECONDS": 30,
        "LOGIN_LOCK_MAX_SECONDS": 3600,
    }


def test_back_off_doubles_after_the_free_failures_up_to_the_cap():
    assert [lock_seconds(n, 5, 30, 3600) for n in range(1, 11)] == [0, 0, 0, 0, 30, 60, 120, 240, 480, 960]
    assert lock_seconds(50, 5, 30, 3600) == 3600
    assert lock_seconds(10**6, 5, 30, 3600) == 3600


def login(client, username, password, address="10.0.0.1"):
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def test_fifty_wrong_passwords_then_the_right_one_is_refused_with_429_and_retry_after(client, db, lockout):
    factories.user_with_roles("ann", ("workers",))
    statuses = [login(client, "ann", f"guess-{n}").status_code for n in range(50)]
    assert statuses[:4] == [200] * 4  # a wrong password re-shows the form
    assert set(statuses[5:]) == {429}

    response = login(client, "ann", PASSWORD)
    assert response.status_code == 429
    assert 0 < int(response.headers["Retry-After"]) <= 30
    assert "Too many failed sign-ins" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_while_locked_no_password_is_checked_so_the_lock_does_not_grow(client, db, lockout):
    factories.user_with_roles("ann", ("workers",))
    for n in range(5):
        login(client, "ann", f"guess-{n}")
    for n in range(30):
        login(client, "ann", f"more-{n}")
    assert cache.get(login_throttle._scopes(None, "ann")[-1].key)["failures"] == 5


def test_the_right_password_works_again_after_the_lock_and_clears_the_count(client, db, lockout, monkeypatch):
    factories.user_with_roles("ann", ("workers",))
    for n in range(5):
        login(client, "ann", f"guess-{n}")
    clock = login_throttle.time.time()
    monkeypatch.setattr(login_throttle.time, "time", lambda: clock + 31)
    response = login(client, "ann", PASSWORD)
    assert response.status_code == 302
    assert cache.get(login_throttle._scopes(None, "ann")[-1].key) is None


def test_one_address_guessing_many_accounts_is_locked_too(client, db, lockout):
    factories.user_with_roles("ann", ("workers",))
    for n in range(20):
        login(client, f"user-{n}", "wrong")  # one failure per account: no account lock
    response = login(client, "ann", PASSWORD)
    assert response.status_code == 429
    assert login(client, "ann", PASSWORD, address="10.0.0.2").status_code == 302  # another address is fine


def test_a_spoofed_forwarded_for_header_does_not_escape_the_address_lock(client, db, lockout):
    factories.user_with_roles("ann", ("workers",))
    for n in range(20):
        client.post(
            "/accounts/login/",
            {"username": f"user-{n}", "password": "x"},
            REMOTE_ADDR="10.0.0.1",
            HTTP_X_FORWARDED_FOR=f"192.0.2.{n}",
        )
    assert login(client, "ann", PASSWORD).status_code == 429


def test_the_admin_login_is_locked_with_the_same_count(client, db, lockout):
    admin = factories.user_with_roles("boss", ())
    admin.is_staff = admin.is_superuser = True
    admin.save()
    for n in range(5):
        client.post("/admin/login/", {"username": "boss", "password": f"g{n}"}, REMOTE_ADDR="10.0.0.9")
    response = client.post(
        "/admin/login/", {"username": "boss", "password": PASSWORD}, REMOTE_ADDR="10.0.0.9"
    )
    assert "Too many failed sign-ins" in response.content.decode()
    assert "_auth_user_id" not in client.session
    assert login(client, "boss", PASSWORD, address="10.0.0.8").status_code == 429  # the account, anywhere


def test_sign_ins_without_a_request_count_per_account_only(db, lockout):
    from django.contrib.auth import authenticate

    factories.user_with_roles("ann", ("workers",))
    for n in range(25):  # more than an address allows, over several accounts
        authenticate(username=f"script-{n}", password="wrong")
    assert authenticate(username="ann", password=PASSWORD) is not None


def test_the_token_serializer_path_is_locked_as_well(db, lockout):
    factories.user_with_roles("ann", ("workers",))
    request = RequestFactory().post("/api/v1/auth/token", REMOTE_ADDR="10.0.0.3")

    def token_login(password):
        form = AuthTokenSerializer(
            data={"username": "ann", "password": password}, context={"request": request}
        )
        return form.is_valid()

    assert not any(token_login(f"guess-{n}") for n in range(5))
    assert token_login(PASSWORD) is False


@pytest.fixture
def rates(settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            "anon": "3/min",
            "worker": "5/min",
            "reviewer": "7/min",
            "organizer": "9/min",
        },
    }


def calls_until_429(client, path: str, limit: int = 30):
    for n in range(limit):
        response = client.get(path)
        if response.status_code == 429:
            return n, response
    return limit, None


@pytest.mark.parametrize(("roles", "allowed"), [(("workers",), 5), (("reviewers",), 7), (("organizers",), 9)])
def test_each_role_gets_its_own_rate_then_429_with_retry_after(db, rates, roles, allowed):
    user = factories.user_with_roles("someone", roles)
    allowed_calls, response = calls_until_429(client_for(user), "/api/v1/me")
    assert allowed_calls == allowed
    assert response.json()["detail"].startswith("Request was throttled")
    assert 0 < int(response.headers["Retry-After"]) <= 60


def test_anonymous_callers_are_limited_by_address(db, rates):
    # Every API view but the schema needs a sign-in, and DRF answers 401 before throttling: test the class.
    def allowed(address: str) -> bool:
        request = Request(RequestFactory().get("/api/schema/", REMOTE_ADDR=address))
        request.user = AnonymousUser()
        return RoleRateThrottle().allow_request(request, None)

    assert [allowed("10.1.1.1") for _ in range(4)] == [True, True, True, False]
    assert allowed("10.1.1.2")


def test_one_users_limit_does_not_touch_another(db, rates):
    first = factories.user_with_roles("one", ("workers",))
    second = factories.user_with_roles("two", ("workers",))
    calls_until_429(client_for(first), "/api/v1/me")
    assert client_for(second).get("/api/v1/me").status_code == 200


def test_a_token_authenticated_worker_is_throttled_without_an_extra_query(db, settings):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from rest_framework.authtoken.models import Token

    user = factories.user_with_roles("tok", ("workers",))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")

    def next_task_queries(rate) -> int:
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"worker": rate}}
        client.get("/api/v1/tasks/next/")  # warm up (prepared statements, caches)
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/api/v1/tasks/next/").status_code == 204
        return len(queries)

    assert next_task_queries("1000/min") == next_task_queries(None)
