"""Settings come from the environment: production refuses to start half-configured and passes Django's
deployment checks; DATABASE_URL, CELERY_BROKER_URL and AWS_STORAGE_BUCKET_NAME switch the backends."""

from __future__ import annotations

import json
import secrets

from tests.config.conftest import clean_env, run

PRINT_SETTINGS = """
import json, os
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
from django.conf import settings
print(json.dumps({
    "engine": settings.DATABASES["default"]["ENGINE"],
    "db_name": str(settings.DATABASES["default"]["NAME"]),
    "db_host": settings.DATABASES["default"].get("HOST", ""),
    "eager": settings.CELERY_TASK_ALWAYS_EAGER,
    "broker": settings.CELERY_BROKER_URL,
    "storage": settings.STORAGES["default"],
    "debug": settings.DEBUG,
    "embedded_beat": settings.CROWDLABEL["EMBEDDED_BEAT"],
    "lease_expiry_every": settings.CELERY_BEAT_SCHEDULE["expire-leases"]["schedule"].total_seconds(),
}))
"""


def settings_under(var_dir, **env) -> dict:
    result = run(["-c", PRINT_SETTINGS], clean_env(var_dir, **env))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def production_env(var_dir, **extra):
    return clean_env(
        var_dir,
        DJANGO_ENV="production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(64),
        DJANGO_ALLOWED_HOSTS="example.org",
        **extra,
    )


def test_production_without_secret_key_and_hosts_refuses_to_start_naming_both(var_dir):
    result = run(["manage.py", "check"], clean_env(var_dir, DJANGO_ENV="production"))
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr and "DJANGO_ALLOWED_HOSTS" in result.stderr
    assert "refusing to start" in result.stderr


def test_production_names_only_the_variable_that_is_missing(var_dir):
    env = clean_env(var_dir, DJANGO_ENV="production", DJANGO_SECRET_KEY=secrets.token_urlsafe(64))
    result = run(["manage.py", "check"], env)
    assert result.returncode != 0
    assert "DJANGO_ALLOWED_HOSTS" in result.stderr
    assert "DJANGO_SECRET_KEY" not in result.stderr


def test_an_unknown_django_env_is_refused(var_dir):
    result = run(["manage.py", "check"], clean_env(var_dir, DJANGO_ENV="prod"))
    assert result.returncode != 0
    assert "DJANGO_ENV" in result.stderr


def test_production_passes_the_deployment_checks_without_any_warning(var_dir):
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], production_env(var_dir))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_development_defaults_are_sqlite_eager_celery_local_files_and_no_debug(var_dir):
    seen = settings_under(var_dir)
    assert seen["engine"] == "django.db.backends.sqlite3"
    assert seen["db_name"].startswith(str(var_dir))
    assert seen["eager"] is True
    assert seen["storage"]["BACKEND"] == "django.core.files.storage.FileSystemStorage"
    assert seen["debug"] is False
    assert seen["embedded_beat"] is True  # runserver runs the beat schedule in-process
    assert seen["lease_expiry_every"] == 60


def test_the_embedded_beat_is_off_with_a_broker_or_when_turned_off_and_its_intervals_are_settings(var_dir):
    assert settings_under(var_dir, CELERY_BROKER_URL="redis://127.0.0.1:6379/0")["embedded_beat"] is False
    assert settings_under(var_dir, CROWDLABEL_EMBEDDED_BEAT="0")["embedded_beat"] is False
    assert settings_under(var_dir, CROWDLABEL_LEASE_EXPIRY_EVERY_SECONDS="5")["lease_expiry_every"] == 5
    refused = run(["-c", PRINT_SETTINGS], clean_env(var_dir, CROWDLABEL_REVIEW_SCAN_EVERY_SECONDS="0"))
    assert (
        refused.returncode != 0
        and "CROWDLABEL_REVIEW_SCAN_EVERY_SECONDS must be at least 1" in refused.stderr
    )


def test_database_url_selects_postgresql(var_dir):
    seen = settings_under(var_dir, DATABASE_URL="postgres://crowd:secret@db.example.org:5432/crowdlabel")
    assert seen["engine"] == "config.postgresql"  # Django's backend with a local health check
    assert seen["db_name"] == "crowdlabel"
    assert seen["db_host"] == "db.example.org"


def test_a_broker_url_turns_eager_celery_off(var_dir):
    seen = settings_under(var_dir, CELERY_BROKER_URL="redis://127.0.0.1:6379/0")
    assert seen["eager"] is False
    assert seen["broker"] == "redis://127.0.0.1:6379/0"


def test_a_bucket_name_selects_s3_storage(var_dir):
    seen = settings_under(var_dir, AWS_STORAGE_BUCKET_NAME="crowd-media", AWS_S3_REGION_NAME="eu-west-1")
    assert seen["storage"]["BACKEND"] == "storages.backends.s3.S3Storage"
    assert seen["storage"]["OPTIONS"]["bucket_name"] == "crowd-media"
    assert seen["storage"]["OPTIONS"]["region_name"] == "eu-west-1"


def test_the_s3_backend_builds_from_those_settings_without_network(var_dir):
    code = (
        "import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'\n"
        "import django; django.setup()\n"
        "from django.core.files.storage import storages\n"
        "backend = storages['default']\n"
        "print(type(backend).__name__, backend.bucket_name)\n"
    )
    result = run(["-c", code], clean_env(var_dir, AWS_STORAGE_BUCKET_NAME="crowd-media"))
    assert result.returncode == 0, result.stderr
    assert "S3Storage crowd-media" in result.stdout
