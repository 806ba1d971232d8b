"""Crowdlabel settings, all read from the environment in this one module.

Defaults are the embedded ones (SQLite, eager Celery, local file storage) so `make run` works on a fresh
machine; production differs only by environment variables (see docs/deployment.md).
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

from config import dbpool
from config.csp import media_origins
from config.envvars import env_bool, env_float, env_int
from config.secret_key import DEVELOPMENT_KEY, non_local_hosts, secret_key_problem
from config.storage import s3_storage
from config.tasklimits import soft_time_limit

BASE_DIR = Path(__file__).resolve().parent.parent


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_rate(name: str, default: str | None) -> str | None:
    """A DRF rate such as "100/min" ("off" for none); refused at start when malformed."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if value.lower() == "off":
        return None
    number, _, period = value.partition("/")
    if not (number.isascii() and number.isdigit() and period[:1] in {"s", "m", "h", "d"}):
        raise ImproperlyConfigured(f"{name} must look like 100/min (or 'off'), got {value!r}")
    return value


DJANGO_ENV = os.environ.get("DJANGO_ENV", "development").strip().lower()
if DJANGO_ENV not in {"development", "production"}:
    raise ImproperlyConfigured(f"DJANGO_ENV must be 'development' or 'production', got {DJANGO_ENV!r}")
PRODUCTION = DJANGO_ENV == "production"

if PRODUCTION:
    _missing = [name for name in ("DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS") if not os.environ.get(name)]
    if _missing:
        raise ImproperlyConfigured(
            f"DJANGO_ENV=production needs {' and '.join(_missing)} in the environment; refusing to start."
        )
    SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]
    _weak = secret_key_problem(SECRET_KEY)
    if _weak:
        raise ImproperlyConfigured(
            f"DJANGO_SECRET_KEY {_weak}; refusing to start. "
            'Generate one with: python -c "import secrets; print(secrets.token_urlsafe(64))"'
        )
    ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS")
else:
    # A fixed key is fine for the embedded development setup on this machine: it protects nothing that matters.
    # Served to any other host it would let anyone forge sessions, so that needs a key of its own.
    SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", DEVELOPMENT_KEY)
    ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver,[::1]")
    _public = non_local_hosts(ALLOWED_HOSTS)
    if _public and secret_key_problem(SECRET_KEY):
        raise ImproperlyConfigured(
            f"DJANGO_ENV is {DJANGO_ENV!r} but DJANGO_ALLOWED_HOSTS names other hosts ({', '.join(_public)}) and "
            f"DJANGO_SECRET_KEY {secret_key_problem(SECRET_KEY)}; refusing to start. Set DJANGO_ENV=production "
            "with a strong DJANGO_SECRET_KEY (or serve only 127.0.0.1/localhost)."
        )

DEBUG = env_bool("DJANGO_DEBUG", False)
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before whitenoise and staticfiles: its `runserver` (which runs the beat schedule in-process when there is
    # no broker, outbox/embedded_beat.py) wraps theirs.
    "outbox",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "storages",
    "config.apps.PlatformConfig",
    "hierarchy",
    "annotation",
    "predictions",
    "candidates",
    "consensus",
    "boxes",
    "gold",
    "multilabel",
    "review",
    "benchmark",
    "crowd",
    "organize",
    "frontend",
    "simulator",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.requestcheck.RequestCheckMiddleware",
    "config.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.auth_failures.AuthFailureThrottleMiddleware",
    "config.dbconnection.ConnectionLossMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Database: SQLite file by default, PostgreSQL (psycopg 3) when DATABASE_URL is set.
VAR_DIR = Path(os.environ.get("CROWDLABEL_VAR_DIR", BASE_DIR / "var"))
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    # Health checks: a persistent connection that died between requests (a killed backend, a restarted
    # server) is replaced before the request uses it; one lost during a request is config.dbconnection's.
    # With DB_POOL=1 the pool holds the connections, and the backend checks each one it hands out the same way
    # instead of psycopg_pool, whose check (on with CONN_HEALTH_CHECKS) would cost a round trip each time.
    DATABASES = {
        "default": dj_database_url.parse(
            DATABASE_URL,
            conn_max_age=dbpool.conn_max_age(os.environ),
            conn_health_checks=not dbpool.pool_on(os.environ),
        )
    }
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # The same backend with a health check that needs no round trip (config/postgresql/base.py).
        DATABASES["default"]["ENGINE"] = "config.postgresql"
    _pool = dbpool.pool_options(os.environ, DATABASES["default"]["ENGINE"])
    if _pool:
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = _pool
    if env_bool("DB_ASYNC_COMMIT") and DATABASES["default"]["ENGINE"].endswith("postgresql"):
        # For throwaway test databases only: commits stop waiting for the disk flush.
        DATABASES["default"].setdefault("OPTIONS", {})["options"] = "-c synchronous_commit=off"
else:
    dbpool.pool_options(os.environ, "sqlite3")  # DB_POOL=1 without DATABASE_URL is refused
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # the embedded setup keeps its SQLite file and media here
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "crowdlabel.sqlite3",
            "OPTIONS": {
                "timeout": 20,
                # WAL lets readers run while one writer commits, and NORMAL sync is durable at checkpoints;
                # IMMEDIATE takes the write lock when a transaction starts, so concurrent requests queue
                # instead of failing with "database is locked" halfway through.
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
            },
            # Tests: a file beside it, not Django's shared in-memory database, whose one connection the live
            # server's request threads all share (a page's parallel requests then fail with "database table is
            # locked" instead of waiting their turn, as they do on a file with WAL and the timeout above).
            "TEST": {"NAME": str(VAR_DIR / "test-crowdlabel.sqlite3")},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Sign-ins go through the lockout with back-off per account and per address (config/login_throttle.py).
AUTHENTICATION_BACKENDS = ["config.login_throttle.ThrottledModelBackend"]

# The cache holds sign-in failure counts and API rate-limit histories: local memory (one process) by default,
# Redis when CROWDLABEL_CACHE_URL is set, which every deployment with more than one process needs.
CACHE_URL = os.environ.get("CROWDLABEL_CACHE_URL", "")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "crowdlabel"}
    )
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
# Signing out lands on the sign-in page with a word that it worked, not on the admin's "Logged out" page.
LOGOUT_REDIRECT_URL = "/accounts/login/?signed_out=1"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(os.environ.get("CROWDLABEL_STATIC_ROOT", VAR_DIR / "static"))
WHITENOISE_USE_FINDERS = not PRODUCTION
if not PRODUCTION:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # development serves from the apps' folders directly

# Media through Django's storage API: local files by default, S3 when a bucket is named.
MEDIA_URL = "/media/"
MEDIA_ROOT = Path(os.environ.get("CROWDLABEL_MEDIA_ROOT", VAR_DIR / "media"))
AWS_STORAGE_BUCKET_NAME = os.environ.get("AWS_STORAGE_BUCKET_NAME", "")
# The S3 endpoint and region serve the media bucket and the buckets images are ingested from
# (annotation/buckets.py); credentials come from the usual AWS variables or the instance role.
AWS_S3_REGION_NAME = os.environ.get("AWS_S3_REGION_NAME") or None
AWS_S3_ENDPOINT_URL = os.environ.get("AWS_S3_ENDPOINT_URL") or None
if AWS_STORAGE_BUCKET_NAME:
    _default_storage = s3_storage(AWS_STORAGE_BUCKET_NAME, AWS_S3_REGION_NAME, AWS_S3_ENDPOINT_URL)
else:
    _default_storage = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
STORAGES = {
    "default": _default_storage,
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

# Uploads: Django spools big files to disk; our own per-file limits live in CROWDLABEL_*.
DATA_UPLOAD_MAX_NUMBER_FILES = env_int("CROWDLABEL_MAX_FILES_PER_UPLOAD", 500)
# Small, so a request of many files holds little in memory: each file beyond it waits in a temporary file.
FILE_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024

# How long an open question nobody can take waits before the sweep settles it, and how often the sweep looks: by
# default twice per wait (every 10 s at most often, every 5 minutes at least), so a starved question is settled
# within 1.5 waits. A sweep on the review scan's 300 s beside a 60 s wait settled it up to 6 waits late, past
# the point where a crowd that ran dry had given up. (A look asks the queue once per crowd worker while questions
# are idle: several seconds of a busy worker's time, so not more often than that.)
_STARVED_AFTER_SECONDS = env_int("CROWDLABEL_STARVED_AFTER_SECONDS", 900)

CROWDLABEL = {
    # Sign-in lockout (config/login_throttle.py): failures allowed per account and per address before the
    # first lock, the first lock's length, doubling with each further failure up to the cap (seconds).
    "LOGIN_FREE_ATTEMPTS_ACCOUNT": env_int("CROWDLABEL_LOGIN_FREE_ATTEMPTS_ACCOUNT", 5),
    "LOGIN_FREE_ATTEMPTS_ADDRESS": env_int("CROWDLABEL_LOGIN_FREE_ATTEMPTS_ADDRESS", 20),
    "LOGIN_LOCK_BASE_SECONDS": env_int("CROWDLABEL_LOGIN_LOCK_BASE_SECONDS", 30),
    "LOGIN_LOCK_MAX_SECONDS": env_int("CROWDLABEL_LOGIN_LOCK_MAX_SECONDS", 3600),
    # Failed authentications (401s: invalid tokens, anonymous calls; wrong passwords) one client address may
    # make per window before its requests get 429 (config/auth_failures.py). Production limits by default;
    # development does not, like the API rates.
    "AUTH_FAILURE_RATE": env_rate("CROWDLABEL_AUTH_FAILURE_RATE", "30/min" if PRODUCTION else None),
    # Origins images may load from besides our own (the S3 bucket is added by itself; a CDN goes here).
    "CSP_IMG_SOURCES": env_list("CROWDLABEL_CSP_IMG_SOURCES")
    + media_origins(AWS_STORAGE_BUCKET_NAME, AWS_S3_REGION_NAME, AWS_S3_ENDPOINT_URL),
    # Largest accepted image file, in bytes.
    "MAX_IMAGE_BYTES": env_int("CROWDLABEL_MAX_IMAGE_BYTES", 25 * 1024 * 1024),
    # Largest accepted image, in pixels (width x height): anything above is a decompression bomb to us.
    "MAX_IMAGE_PIXELS": env_int("CROWDLABEL_MAX_IMAGE_PIXELS", 40_000_000),
    # Animations and multi-page files: at most this many frames, and width x height x frames within the
    # budget, read from the header before anything is decoded (only the first frame is kept).
    "MAX_IMAGE_FRAMES": env_int("CROWDLABEL_MAX_IMAGE_FRAMES", 300),
    "MAX_FRAME_PIXELS": env_int("CROWDLABEL_MAX_FRAME_PIXELS", 160_000_000),
    # Pixels one upload request may decode in all; files beyond are refused and go in another request, so no
    # request holds a web process for long (the management command has no such budget).
    "MAX_PIXELS_PER_REQUEST": env_int("CROWDLABEL_MAX_PIXELS_PER_REQUEST", 250_000_000),
    # Hamming distance (of 64 bits) under which two images' perceptual hashes count as near-duplicates.
    "NEAR_DUPLICATE_DISTANCE": env_int("CROWDLABEL_NEAR_DUPLICATE_DISTANCE", 6),
    # Candidate URL imports (candidates/, docs/candidates.md): host:port endpoints let through the address
    # checks (empty: only public addresses), downloads at once, seconds between two requests to one host,
    # attempts per URL with their first back-off, per-read and whole-download time limits, redirect hops,
    # and rows one background task takes before it queues the next batch.
    "CANDIDATE_ALLOWED_HOSTS": env_list("CROWDLABEL_CANDIDATE_ALLOWED_HOSTS"),
    "CANDIDATE_CONCURRENCY": env_int("CROWDLABEL_CANDIDATE_CONCURRENCY", 8),
    "CANDIDATE_HOST_INTERVAL_SECONDS": env_float("CROWDLABEL_CANDIDATE_HOST_INTERVAL_SECONDS", 0.5),
    "CANDIDATE_ATTEMPTS": env_int("CROWDLABEL_CANDIDATE_ATTEMPTS", 3),
    "CANDIDATE_BACKOFF_SECONDS": env_float("CROWDLABEL_CANDIDATE_BACKOFF_SECONDS", 2.0),
    "CANDIDATE_TIMEOUT_SECONDS": env_float("CROWDLABEL_CANDIDATE_TIMEOUT_SECONDS", 10.0),
    "CANDIDATE_TOTAL_SECONDS": env_float("CROWDLABEL_CANDIDATE_TOTAL_SECONDS", 60.0),
    "CANDIDATE_MAX_REDIRECTS": env_int("CROWDLABEL_CANDIDATE_MAX_REDIRECTS", 5),
    "CANDIDATE_BATCH_ROWS": env_int("CROWDLABEL_CANDIDATE_BATCH_ROWS", 200),
    # Buckets `s3://` candidate rows may be read from (candidates/sources.py): the S3 endpoints besides the
    # platform's own that organizers may register buckets on, and the `dataset:bucket` pairs the operator lets
    # read with the platform's own credentials (without them a bucket needs the organizer's access key).
    "SOURCE_BUCKET_ENDPOINTS": env_list("CROWDLABEL_SOURCE_BUCKET_ENDPOINTS"),
    "SOURCE_BUCKET_GRANTS": env_list("CROWDLABEL_SOURCE_BUCKET_GRANTS"),
    # Who decides the box pipeline's quality and coverage questions: "consensus" (calibrated, sequential; the
    # default) or "fixed" (annotation's fixed vote: quality 2 yes or 2 no, coverage 3 yes or 1 no), kept for
    # comparison (docs/boxes.md). The older name CROWDLABEL_BOX_QUALITY_BACKEND is still read.
    "BOX_QUESTION_BACKEND": os.environ.get(
        "CROWDLABEL_BOX_QUESTION_BACKEND", os.environ.get("CROWDLABEL_BOX_QUALITY_BACKEND", "consensus")
    ),
    # How long a worker holds a leased micro-task.
    "LEASE_SECONDS": env_int("CROWDLABEL_LEASE_SECONDS", 300),
    # How often the schedule returns tasks whose lease ran out to the queue (annotation.tasks.leases_expire).
    "LEASE_EXPIRY_EVERY_SECONDS": env_int("CROWDLABEL_LEASE_EXPIRY_EVERY_SECONDS", 60),
    # How long after sending it a worker may take back an answer (a mis-keyed Y/N) while its question is open.
    "ANSWER_UNDO_SECONDS": env_int("CROWDLABEL_ANSWER_UNDO_SECONDS", 10),
    # An open question whose task nobody of its dataset's crowd can take (all voted, blocked, unqualified or
    # barred) is settled with the votes it has, or sent to review, once its task has been untouched this long
    # (consensus/starved.py; the review sweep runs it on a schedule).
    "STARVED_AFTER_SECONDS": _STARVED_AFTER_SECONDS,
    # How often the schedule runs the stuck sweep (review.tasks.stuck_enqueue: starved questions and box jobs,
    # review items for what waits in review without one).
    "STUCK_SWEEP_EVERY_SECONDS": env_int(
        "CROWDLABEL_STUCK_SWEEP_EVERY_SECONDS", min(300, max(10, _STARVED_AFTER_SECONDS // 2))
    ),
    # The queue's hot statements run as prepared statements on PostgreSQL (annotation/queue/sqlrows.py); set 0 behind a
    # connection pooler in transaction mode, which cannot keep them.
    "DB_PREPARED_STATEMENTS": env_bool("CROWDLABEL_DB_PREPARED_STATEMENTS", True),
    # Review queues (ILSVRC Appendix E): a pair is queued when its IoU is strictly above the threshold;
    # organizer-listed confusable class pairs use the lower one.
    "REVIEW_DUPLICATE_IOU": env_float("CROWDLABEL_REVIEW_DUPLICATE_IOU", 0.5),
    "REVIEW_CROSS_CLASS_IOU": env_float("CROWDLABEL_REVIEW_CROSS_CLASS_IOU", 0.5),
    "REVIEW_CONFUSABLE_IOU": env_float("CROWDLABEL_REVIEW_CONFUSABLE_IOU", 0.3),
    # How long a reviewer holds a leased review item.
    "REVIEW_LEASE_SECONDS": env_int("CROWDLABEL_REVIEW_LEASE_SECONDS", 600),
    # How long a reviewer may take back their own latest decision (a mis-keyed 1-5); organizers have no limit.
    "REVIEW_UNDO_SECONDS": env_int("CROWDLABEL_REVIEW_UNDO_SECONDS", 600),
    # A reviewer's time per review item, for the cost ledger's reviewer-minutes (1 to 3600): an item is what the
    # crowd could not settle (split votes at the cap, overlapping boxes, a box job), looked at closely in the
    # full-size image with its votes or boxes, so half a minute rather than a crowd answer's few seconds.
    "REVIEW_SECONDS_PER_ITEM": env_int("CROWDLABEL_REVIEW_SECONDS_PER_ITEM", 30),
    # A failed overlap check (accepted boxes are checked on commit) requests a catch-up scan this many seconds
    # later; requests in between join that scan.
    "REVIEW_SCAN_DEBOUNCE_SECONDS": env_int("CROWDLABEL_REVIEW_SCAN_DEBOUNCE_SECONDS", 30),
    # The scheduled catch-up scan of every dataset with accepted boxes not checked yet, and the sweep that queues questions and box
    # jobs left in review without a review item.
    "REVIEW_SCAN_EVERY_SECONDS": env_int("CROWDLABEL_REVIEW_SCAN_EVERY_SECONDS", 300),
    # Background work (outbox/): a task that failed, or whose worker died, this many times is parked for the
    # organizer instead of being tried again.
    "OUTBOX_MAX_ATTEMPTS": env_int("CROWDLABEL_OUTBOX_MAX_ATTEMPTS", 3),
    # How often the relay sends work the broker could not take on commit and sweeps work whose worker died.
    "OUTBOX_RELAY_SECONDS": env_int("CROWDLABEL_OUTBOX_RELAY_SECONDS", 30),
    # Without a broker there is no beat either: `runserver` then runs CELERY_BEAT_SCHEDULE in a thread of its
    # own (outbox/embedded_beat.py), so lease expiry, the outbox relay, the overlap scans and the stuck-question
    # sweep happen in the embedded default too. Never with a broker: beat sends the schedule to the workers.
    "EMBEDDED_BEAT": env_bool("CROWDLABEL_EMBEDDED_BEAT", True) and not os.environ.get("CELERY_BROKER_URL"),
    # Celery's hard time limit for any task (the longest is an export with images); the broker's visibility
    # timeout is sized from it.
    "TASK_TIME_LIMIT_SECONDS": env_int("CROWDLABEL_TASK_TIME_LIMIT_SECONDS", 1800),
    # A running outbox row is leased to its worker for this long and renewed a third of the way through: a row
    # whose lease ran out lost its worker (killed, out of memory, machine gone), and the relay sends it again.
    # Work lost with its worker is back on the broker within this plus OUTBOX_RELAY_SECONDS.
    "OUTBOX_LEASE_SECONDS": env_int("CROWDLABEL_OUTBOX_LEASE_SECONDS", 60),
    # Reports over a whole dataset (the Statistics page, per-class statistics) are computed in the background
    # and kept; one older than this is shown while a fresh one is computed (benchmark/reports.py).
    "REPORT_MAX_AGE_SECONDS": env_int("CROWDLABEL_REPORT_MAX_AGE_SECONDS", 300),
    # Crowd providers (docs/providers.md): micro-tasks per provider session when a dataset sets no size for a
    # kind, and how long a session's signed token stays valid.
    "BUNDLE_SIZE": env_int("CROWDLABEL_BUNDLE_SIZE", 10),
    "BUNDLE_SESSION_SECONDS": env_int("CROWDLABEL_BUNDLE_SESSION_SECONDS", 4 * 3600),
    # Mechanical Turk: the sandbox unless production is switched on explicitly. PUBLIC_URL is the HTTPS origin
    # MTurk's ExternalQuestion frames (/mturk/task/ is appended). FRAME_ANCESTORS may frame /mturk/task/;
    # SUBMIT_HOSTS are the only origins its form posts to (turkSubmitTo is never taken on trust).
    "MTURK_PRODUCTION": env_bool("CROWDLABEL_MTURK_PRODUCTION", False),
    "MTURK_REGION": os.environ.get("CROWDLABEL_MTURK_REGION", "us-east-1"),
    "MTURK_PUBLIC_URL": os.environ.get("CROWDLABEL_MTURK_PUBLIC_URL", ""),
    "MTURK_FRAME_HEIGHT": env_int("CROWDLABEL_MTURK_FRAME_HEIGHT", 800),
    "MTURK_FRAME_ANCESTORS": env_list(
        "CROWDLABEL_MTURK_FRAME_ANCESTORS",
        # MTurk shows HITs to workers on worker.mturk.com; www.mturk.com and the sandbox frame them too.
        "https://worker.mturk.com,https://www.mturk.com,https://workersandbox.mturk.com",
    ),
    "MTURK_SUBMIT_HOSTS": env_list(
        "CROWDLABEL_MTURK_SUBMIT_HOSTS", "https://www.mturk.com,https://workersandbox.mturk.com"
    ),
    "MTURK_SYNC_EVERY_SECONDS": env_int("CROWDLABEL_MTURK_SYNC_EVERY_SECONDS", 600),
}
if CROWDLABEL["OUTBOX_MAX_ATTEMPTS"] < 1:
    raise ImproperlyConfigured("CROWDLABEL_OUTBOX_MAX_ATTEMPTS must be at least 1")
if CROWDLABEL["OUTBOX_LEASE_SECONDS"] < 3:
    raise ImproperlyConfigured("CROWDLABEL_OUTBOX_LEASE_SECONDS must be at least 3")
if not 1 <= CROWDLABEL["REVIEW_SECONDS_PER_ITEM"] <= 3600:
    raise ImproperlyConfigured("CROWDLABEL_REVIEW_SECONDS_PER_ITEM must be between 1 and 3600")
if CROWDLABEL["TASK_TIME_LIMIT_SECONDS"] < 1:
    raise ImproperlyConfigured("CROWDLABEL_TASK_TIME_LIMIT_SECONDS must be at least 1")
for _every in (
    "LEASE_EXPIRY_EVERY",
    "OUTBOX_RELAY",
    "REVIEW_SCAN_EVERY",
    "STUCK_SWEEP_EVERY",
    "MTURK_SYNC_EVERY",
):
    if CROWDLABEL[f"{_every}_SECONDS"] < 1:  # a schedule of 0 s would run its task back to back
        raise ImproperlyConfigured(f"CROWDLABEL_{_every}_SECONDS must be at least 1")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "crowd.authentication.WorkerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Request bodies are JSON (one media type in the schema, as client generators need); the file uploads
    # name config.parsers.MultiPartParser themselves. Size and nesting limits, and no NUL or lone surrogate in
    # any string (config/parsers.py).
    "DEFAULT_PARSER_CLASSES": ["config.parsers.JSONParser"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "DEFAULT_PAGINATION_CLASS": "config.pagination.StrictPageNumberPagination",
    # Per-role rates (config/throttling.py), e.g. "1200/min"; "off" disables one. Production limits by default;
    # development does not, so in-process simulations run at full speed.
    "DEFAULT_THROTTLE_CLASSES": ["config.throttling.RoleRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        scope: env_rate(f"CROWDLABEL_THROTTLE_{scope.upper()}", default if PRODUCTION else None)
        for scope, default in (
            ("anon", "120/min"),
            ("worker", "1200/min"),
            ("reviewer", "1200/min"),
            ("organizer", "1200/min"),
        )
    },
    # Proxies in front of the app that append to X-Forwarded-For (client addresses for throttles and lockout).
    "NUM_PROXIES": env_int("CROWDLABEL_NUM_PROXIES", 0),
    "PAGE_SIZE": 100,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + ([] if PRODUCTION else ["rest_framework.renderers.BrowsableAPIRenderer"]),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Crowdlabel API",
    "DESCRIPTION": "Micro-tasks, datasets and labels of the Crowdlabel annotation platform.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI assets are served from our own static files: no CDN needed.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The error answers every operation can give and field defaults a validator accepts (config/openapi.py),
    # after the default enum hook.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.openapi.document_error_responses",
        "config.openapi.defaults_outside_branches",
    ],
    "ENUM_NAME_OVERRIDES": {
        "QuestionStateEnum": "consensus.models.QuestionState",
        "QuestionKindEnum": "consensus.models.QuestionKind",
        "ReviewKindEnum": "review.models.ReviewKind",
        "QuestionRoleEnum": "consensus.models.QuestionRole",
        "EstimatorEnum": "consensus.models.Estimator",
        "SettingsEstimatorEnum": "consensus.models.SETTINGS_ESTIMATORS",
        "InvitationRoleEnum": "crowd.models.InvitationRole",
        "AssignmentStateEnum": "annotation.models.AssignmentState",
        "ExportJobFormatEnum": "benchmark.models.ExportFormat",
        "ExportJobSplitEnum": "benchmark.models.ExportSplit",
        "ExportJobStateEnum": "benchmark.models.JobState",
        "ExportFileNamesEnum": "benchmark.models.ExportFileNames",
        "DecideDecisionEnum": "review.serializers.DECIDE_CHOICES",
        "StatusEnum": "multilabel.models.LabelingStatus",
    },
}

# Celery: eager (in-process) when no broker is configured, a real broker otherwise.
CELERY_TASK_ALWAYS_EAGER = not os.environ.get("CELERY_BROKER_URL")
# Eager mode never talks to a broker; the in-memory transport only keeps kombu from guessing a host.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or "memory://"
# Redis redelivers an unacknowledged message (its worker's main process died) after the visibility timeout:
# longer than the longest task, so a running task is never handed to a second worker, and no longer.
# A key prefix lets several deployments (or test runs) share one Redis database without taking each other's
# messages.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CROWDLABEL["TASK_TIME_LIMIT_SECONDS"] + 300}
if os.environ.get("CELERY_BROKER_KEY_PREFIX"):
    CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = os.environ["CELERY_BROKER_KEY_PREFIX"]
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "") or None
# A message is acknowledged when its task has finished, and handed back when the pool process running it died
# (kill -9, out of memory): tasks are idempotent, and the outbox counts the attempts (outbox/services.py).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_TASK_TIME_LIMIT = CROWDLABEL["TASK_TIME_LIMIT_SECONDS"]
CELERY_TASK_SOFT_TIME_LIMIT = soft_time_limit(CROWDLABEL["TASK_TIME_LIMIT_SECONDS"])
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A request hands work to the broker after its commit: with the broker down it must give up quickly (the
# outbox relay delivers later), not hang the request.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.5,
    "interval_max": 0.5,
}
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    "consensus.*": {"queue": "consensus"},
    "benchmark.*": {"queue": "exports"},
    "crowd.mturk.*": {"queue": "mturk"},
}
# Every queue a task is routed to, declared: a worker started without -Q consumes them all (otherwise it would
# consume "default" only, and calibration rebuilds, exports and MTurk syncs would wait in their queues for good).
CELERY_TASK_QUEUES = tuple(Queue(name) for name in ("default", "consensus", "exports", "mturk"))
CELERY_BEAT_SCHEDULE = {
    "outbox-relay": {
        "task": "outbox.tasks.relay",
        "schedule": timedelta(seconds=CROWDLABEL["OUTBOX_RELAY_SECONDS"]),
    },
    "mturk-sync-hits": {
        "task": "crowd.mturk.hits_sync",
        "schedule": timedelta(seconds=CROWDLABEL["MTURK_SYNC_EVERY_SECONDS"]),
    },
    "expire-leases": {
        "task": "annotation.tasks.leases_expire",
        "schedule": timedelta(seconds=CROWDLABEL["LEASE_EXPIRY_EVERY_SECONDS"]),
    },
    "review-scan-overlaps": {
        "task": "review.tasks.overlaps_scan_due",
        "schedule": timedelta(seconds=CROWDLABEL["REVIEW_SCAN_EVERY_SECONDS"]),
    },
    "review-queue-stuck": {
        "task": "review.tasks.stuck_enqueue",
        "schedule": timedelta(seconds=CROWDLABEL["STUCK_SWEEP_EVERY_SECONDS"]),
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "WARNING")},
}

if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
