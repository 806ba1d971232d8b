"""Brute force is slowed to a crawl: sign-in lockout with back-off per (account, address) and per address on the
login page, the admin login and token endpoints, which a guesser cannot turn against an account's owner; failed
authentication limited per address (invalid tokens, anonymous calls, wrong passwords); client addresses behind a
proxy, and the check that warns when a proxy is in front but not counted; API rate limits per role."""

from __future__ import annotations

import io
import secrets

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.core.checks import run_checks
from django.core.management import call_command
from django.test import RequestFactory
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.request import Request
from rest_framework.test import APIClient

from config import auth_failures, login_throttle
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


def login(client, username, password, address="10.0.0.1", **headers):
    return client.post(
        "/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address, **headers
    )


def account_key(username: str, address: str) -> str:
    """The cache key of an account's failures from one address."""
    return login_throttle._scopes(RequestFactory().post("/", REMOTE_ADDR=address), username)[-1].key


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
    assert cache.get(account_key("ann", "10.0.0.1"))["failures"] == 5


def test_the_right_password_works_again_after_the_lock_and_clears_the_count(client, db, lockout, monkeypatch):
    factories.user_with_roles("ann", ("workers",))
    for n in range(5):
        login(client, "ann", f"guess-{n}")
    clock = login_throttle.time.time()
    monkeypatch.setattr(login_throttle.time, "time", lambda: clock + 31)
    response = login(client, "ann", PASSWORD)
    assert response.status_code == 302
    assert cache.get(account_key("ann", "10.0.0.1")) is None


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


def test_the_admin_login_is_locked_with_the_same_count_and_only_from_that_address(client, db, lockout):
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
    assert login(client, "boss", PASSWORD, address="10.0.0.9").status_code == 429  # the login page too
    assert login(client, "boss", PASSWORD, address="10.0.0.8").status_code == 302  # its owner, elsewhere


def test_someone_failing_on_a_known_username_does_not_lock_its_owner_out(client, db, lockout):
    factories.user_with_roles("organizer@example.org", ("organizers",))
    for n in range(50):
        login(client, "organizer@example.org", f"guess-{n}", address="198.51.100.7")
    assert login(client, "organizer@example.org", PASSWORD, address="198.51.100.7").status_code == 429
    assert login(client, "organizer@example.org", PASSWORD, address="203.0.113.5").status_code == 302


@pytest.fixture
def one_proxy(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}


def test_behind_a_proxy_with_its_count_set_each_client_has_its_own_lock(client, db, lockout, one_proxy):
    factories.user_with_roles("ann", ("workers",))
    proxy = "10.9.9.9"  # every request arrives from the proxy; the client is the entry the proxy appended
    for n in range(30):
        # What the client writes left of its real address is its own to forge, and is not believed.
        forged = f"192.0.2.{n}, 198.51.100.7"
        login(client, "ann", f"guess-{n}", address=proxy, HTTP_X_FORWARDED_FOR=forged)
    assert (
        login(client, "ann", PASSWORD, address=proxy, HTTP_X_FORWARDED_FOR="198.51.100.7").status_code == 429
    )
    assert (
        login(client, "ann", PASSWORD, address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.5").status_code == 302
    )


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


# --- failed authentication per address (config/auth_failures.py) --------------------------------------------


@pytest.fixture
def failure_rate(settings):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "AUTH_FAILURE_RATE": "5/min"}


def with_token(key: str, address: str = "10.2.2.2", **extra):
    return APIClient().get("/api/v1/me", HTTP_AUTHORIZATION=f"Token {key}", REMOTE_ADDR=address, **extra)


def test_invalid_tokens_from_one_address_get_429_with_retry_after_past_the_rate(db, failure_rate):
    statuses = [with_token(secrets.token_hex(20)).status_code for _ in range(40)]
    assert statuses[:5] == [401] * 5
    assert set(statuses[5:]) == {429}
    refused = with_token(secrets.token_hex(20))
    assert refused.json()["detail"].startswith("Too many failed authentications from this address")
    assert 0 < int(refused.headers["Retry-After"]) <= 60
    assert with_token(secrets.token_hex(20), address="10.2.2.3").status_code == 401, (
        "another address is not held"
    )


def test_an_address_over_the_rate_is_refused_before_its_credential_is_checked(db, failure_rate):
    user = factories.user_with_roles("tok", ("workers",))
    key = Token.objects.create(user=user).key
    for _ in range(5):
        with_token(secrets.token_hex(20))
    assert with_token(key).status_code == 429, "a right guess now would tell the guesser nothing"
    assert with_token(key, address="10.2.2.3").status_code == 200


def test_anonymous_calls_to_signed_in_endpoints_count_as_failures(db, failure_rate):
    client = APIClient()
    statuses = [client.get("/api/v1/me", REMOTE_ADDR="10.3.3.3").status_code for _ in range(7)]
    assert statuses == [401] * 5 + [429] * 2


def test_wrong_passwords_count_against_the_address_too(client, db, failure_rate):
    for n in range(5):
        login(client, f"someone-{n}", "wrong", address="10.4.4.4")  # a form answer, one per account
    assert APIClient().get("/api/v1/me", REMOTE_ADDR="10.4.4.4").status_code == 429
    assert login(client, "someone-9", "wrong", address="10.4.4.4").status_code == 429


def test_the_address_may_try_again_once_its_oldest_failure_leaves_the_window(db, failure_rate, monkeypatch):
    for _ in range(5):
        with_token(secrets.token_hex(20))
    assert with_token(secrets.token_hex(20)).status_code == 429
    clock = auth_failures.time.time()
    monkeypatch.setattr(auth_failures.time, "time", lambda: clock + 61)
    assert with_token(secrets.token_hex(20)).status_code == 401


def test_a_signed_in_session_is_not_held_up_by_failures_at_its_address(client, db, failure_rate):
    client.force_login(factories.user_with_roles("ann", ("workers",)))
    for _ in range(10):
        with_token(secrets.token_hex(20), address="10.5.5.5")
    assert client.get("/api/v1/me", REMOTE_ADDR="10.5.5.5").status_code == 200


def test_without_a_rate_failures_are_not_limited(db, settings):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "AUTH_FAILURE_RATE": None}
    assert {with_token(secrets.token_hex(20)).status_code for _ in range(40)} == {401}


# --- the proxy count (config/clientaddress.py) ---------------------------------------------------------------


def proxy_warnings(deploy: bool = True) -> list[str]:
    return [m.id for m in run_checks(include_deployment_checks=deploy) if m.id.startswith("crowdlabel.")]


def test_a_request_through_a_proxy_with_no_proxy_count_set_makes_check_deploy_warn(db, caplog):
    assert proxy_warnings() == []
    APIClient().get("/api/v1/me", REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR="203.0.113.5")
    assert proxy_warnings() == ["crowdlabel.W001"]
    assert proxy_warnings(deploy=False) == ["crowdlabel.W001"], "every manage.py command shows it"
    assert "CROWDLABEL_NUM_PROXIES is 0" in caplog.text, "and the server logs it when it first sees one"

    out = io.StringIO()
    call_command("check", "--deploy", stdout=out, stderr=out)
    assert "crowdlabel.W001" in out.getvalue() and "203.0.113.5" in out.getvalue()


def test_with_the_proxy_count_set_or_no_forwarded_header_there_is_no_warning(db, one_proxy):
    APIClient().get("/api/v1/me", REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR="203.0.113.5")
    assert proxy_warnings() == []
