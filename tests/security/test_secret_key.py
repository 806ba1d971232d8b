"""Production refuses a weak or default DJANGO_SECRET_KEY, and without DJANGO_ENV the published development key
is never used for hosts other than this machine."""

from __future__ import annotations

import secrets

import pytest

from config.secret_key import DEVELOPMENT_KEY, non_local_hosts, secret_key_problem
from tests.config.conftest import clean_env, run


@pytest.fixture
def var_dir(tmp_path):
    path = tmp_path / "var"
    path.mkdir()
    return path


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("abc", "has 3 characters"),
        (DEVELOPMENT_KEY, "is the development key"),
        ("django-insecure-" + secrets.token_urlsafe(48), "Django's generated insecure keys"),
        ("ab" * 40, "fewer than 5 different characters"),
    ],
)
def test_weak_keys_are_named_with_the_reason(key, why):
    assert why in secret_key_problem(key)


def test_a_long_random_key_is_accepted():
    assert secret_key_problem(secrets.token_urlsafe(64)) is None


def test_only_this_machine_counts_as_local():
    assert non_local_hosts(["127.0.0.1", "localhost", "[::1]", "testserver", "app.localhost"]) == []
    assert non_local_hosts(["localhost", "label.example.org", "*"]) == ["label.example.org", "*"]


def check(var_dir, **env):
    return run(["manage.py", "check"], clean_env(var_dir, **env))


def test_production_with_a_weak_secret_key_refuses_to_start(var_dir):
    result = check(
        var_dir, DJANGO_ENV="production", DJANGO_SECRET_KEY="abc", DJANGO_ALLOWED_HOSTS="example.org"
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY has 3 characters" in result.stderr and "refusing to start" in result.stderr


def test_production_with_the_development_key_refuses_to_start(var_dir):
    result = check(
        var_dir,
        DJANGO_ENV="production",
        DJANGO_SECRET_KEY=DEVELOPMENT_KEY,
        DJANGO_ALLOWED_HOSTS="example.org",
    )
    assert result.returncode != 0
    assert "is the development key" in result.stderr


def test_without_django_env_a_public_host_needs_a_key_of_its_own(var_dir):
    result = check(var_dir, DJANGO_ALLOWED_HOSTS="label.example.org")
    assert result.returncode != 0
    assert "label.example.org" in result.stderr and "DJANGO_ENV=production" in result.stderr

    strong = check(
        var_dir, DJANGO_ALLOWED_HOSTS="label.example.org", DJANGO_SECRET_KEY=secrets.token_urlsafe(64)
    )
    assert strong.returncode == 0, strong.stderr


def test_without_django_env_this_machine_still_starts_with_the_development_key(var_dir):
    assert check(var_dir).returncode == 0
    assert check(var_dir, DJANGO_ALLOWED_HOSTS="localhost,127.0.0.1").returncode == 0
