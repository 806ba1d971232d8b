"""Settings come from the environment: production refuses to start half-configured and passes Django's
deployment checks; DATABASE_URL, CELERY_BROKER_URL and AWS_STORAGE_BUCKET_NAME switch the backends."""

from __future__ import annotations

import json
import secrets

from config.storage import MAX_CONCURRENCY, PART_MB
from tests.config.conftest import clean_env, run

PRINT_SETTINGS = """
import json, os
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
from django.conf import settings
storage = dict(settings.STORAGES["default"])
# An S3 storage's transfer configuration is an object: its part sizes are what the settings decide.
transfer = storage.get("OPTIONS", {}).get("transfer_config")
if transfer is not None:
    storage["OPTIONS"] = {**storage["OPTIONS"], "transfer_config": {
        "multipart_threshold": transfer.multipart_threshold,
        "multipart_chunksize": transfer.multipart_chunksize,
        "max_concurrency": transfer.max_concurrency,
    }}
print(json.dumps({
    "engine": settings.DATABASES["default"]["ENGINE"],
    "db_name": str(settings.DATABASES["default"]["NAME"]),
    "db_host": settings.DATABASES["default"].get("HOST", ""),
    "eager": settings.CELERY_TASK_ALWAYS_EAGER,
    "broker": settings.CELERY_BROKER_URL,
    "storage": storage,
    "debug": settings.DEBUG,
    "embedded_beat": settings.CROWDLABEL["EMBEDDED_BEAT"],
    "lease_expiry_every": settings.CELERY_BEAT_SCHEDULE["expire-leases"]["schedule"].total_seconds(),
    "stuck_every": settings.CELERY_BEAT_SCHEDULE["review-queue-stuck"]["schedule"].total_seconds(),
    "starved_after": settings.CROWDLABEL["STARVED_AFTER_SECONDS"],
    "review_seconds_per_item": settings.CROWDLABEL["REVIEW_SECONDS_PER_ITEM"],
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


def test_the_stuck_sweep_looks_several_times_per_starved_wait_not_on_the_overlap_scans_schedule(var_dir):
    """Issue 31's server run: with a 60 s starved wait the sweep still ran on the overlap scan's 300 s, so a
    question nobody could take stayed open for up to 6 waits, past a crowd's whole wait for it."""
    seen = settings_under(var_dir, CROWDLABEL_STARVED_AFTER_SECONDS="60")
    assert seen["starved_after"] == 60 and seen["stuck_every"] == 30
    assert settings_under(var_dir)["stuck_every"] == 300  # 900 s wait: the old cadence, at most
    assert settings_under(var_dir, CROWDLABEL_STARVED_AFTER_SECONDS="0")["stuck_every"] == 10
    assert settings_under(var_dir, CROWDLABEL_STARVED_AFTER_SECONDS="300")["stuck_every"] == 150
    assert settings_under(var_dir, CROWDLABEL_STARVED_AFTER_SECONDS="86400")["stuck_every"] == 300
    assert settings_under(var_dir, CROWDLABEL_STUCK_SWEEP_EVERY_SECONDS="7")["stuck_every"] == 7
    refused = run(["-c", PRINT_SETTINGS], clean_env(var_dir, CROWDLABEL_STUCK_SWEEP_EVERY_SECONDS="0"))
    assert (
        refused.returncode != 0
        and "CROWDLABEL_STUCK_SWEEP_EVERY_SECONDS must be at least 1" in refused.stderr
    )


def test_a_reviewers_seconds_per_item_is_a_bounded_setting(var_dir):
    assert settings_under(var_dir)["review_seconds_per_item"] == 30
    assert settings_under(var_dir, CROWDLABEL_REVIEW_SECONDS_PER_ITEM="45")["review_seconds_per_item"] == 45
    for bad in ("0", "3601"):
        refused = run(["-c", PRINT_SETTINGS], clean_env(var_dir, CROWDLABEL_REVIEW_SECONDS_PER_ITEM=bad))
        assert refused.returncode != 0
        assert "CROWDLABEL_REVIEW_SECONDS_PER_ITEM must be between 1 and 3600" in refused.stderr


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
    # Uploads go up in parts of PART_MB (an export archive of any size holds a handful of parts in memory).
    part = PART_MB * 2**20
    assert seen["storage"]["OPTIONS"]["transfer_config"] == {
        "multipart_threshold": part,
        "multipart_chunksize": part,
        "max_concurrency": MAX_CONCURRENCY,
    }


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


def test_production_limits_failed_authentication_per_address_by_default_and_development_does_not(var_dir):
    script = (
        "import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'\n"
        "from django.conf import settings; print(settings.CROWDLABEL['AUTH_FAILURE_RATE'])"
    )
    production = run(["-c", script], production_env(var_dir))
    assert production.stdout.split() == ["30/min"], production.stderr
    assert run(["-c", script], clean_env(var_dir)).stdout.split() == ["None"]
    chosen = run(["-c", script], production_env(var_dir, CROWDLABEL_AUTH_FAILURE_RATE="10/s"))
    assert chosen.stdout.split() == ["10/s"]


def test_a_worker_started_without_queue_names_consumes_every_routed_queue():
    """`celery -A config worker` with no -Q: Celery consumes the declared queues, so every queue a task is
    routed to must be declared (before, such a worker took only "default", and calibration rebuilds waited in
    "consensus" for good: a simulated crowd's hierarchy questions stalled behind their calibration)."""
    from config.celery import app

    declared = set(app.amqp.queues)
    routed = {route["queue"] for route in app.conf.task_routes.values()} | {app.conf.task_default_queue}
    assert routed <= declared, routed - declared
