"""Shared fixtures: users with roles, API clients, small datasets; service requirements per marker."""

from __future__ import annotations

import io
import os
import shutil
import socket

import pytest
from django.core.cache import cache
from django.db import connection
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from PIL import Image as PILImage
from rest_framework.test import APIClient

from consensus import reliability_fits
from hierarchy.graph import graph_cache_clear
from tests import factories

pytest_plugins = ["tests.browser_fixtures", "tests.s3_fixtures"]

REQUIRE_SERVICES = os.environ.get("CROWDLABEL_REQUIRE_SERVICES") == "1"

# Property tests check properties, never speed: no per-example deadline and no "data generation too slow"
# health check, both of which fail on a slow, loaded machine (a test may still ask for more examples).
hypothesis_settings.register_profile(
    "crowdlabel", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("crowdlabel")


def _missing(reason: str):
    """In CI a missing service is a failure; on a developer's machine the test is skipped with the reason."""
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing: {reason}")
    pytest.skip(reason)


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def pytest_runtest_setup(item):
    if item.get_closest_marker("postgres") and connection.vendor != "postgresql":
        _missing("needs PostgreSQL: set DATABASE_URL=postgres://...")
    if item.get_closest_marker("browser") and not shutil.which("chromium"):
        _missing("needs the chromium browser (apt-get install chromium)")
    if item.get_closest_marker("broker"):
        url = os.environ.get("CROWDLABEL_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
        host_port = url.split("://", 1)[-1].split("@")[-1].split("/")[0]
        host, _, port = host_port.partition(":")
        if not port_open(host or "127.0.0.1", int(port or 6379)):
            _missing(f"needs a Celery broker at {url}")


@pytest.fixture(autouse=True)
def _eager_celery_and_tmp_media(settings, tmp_path):
    # Tests run Celery tasks in-process unless they start a real worker themselves.
    settings.CELERY_TASK_ALWAYS_EAGER = True
    # No scheduler thread in tests (one that wants it starts its own: tests/outbox/test_embedded_beat.py).
    settings.CROWDLABEL = {**settings.CROWDLABEL, "EMBEDDED_BEAT": False}
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast, tests only
    settings.MEDIA_ROOT = tmp_path / "media"
    cache.clear()  # sign-in failure counts and API rate histories never carry over from another test
    # Dawid-Skene fits are kept per process between votes (consensus/reliability_fits.py); a fit of another
    # test's (rolled back) votes must not decide this test's questions.
    reliability_fits._fits.clear()
    # Hierarchy graphs too: ids (and fingerprints of the same fixture) come back in every test's database.
    graph_cache_clear()
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    }


@pytest.fixture
def organizer(db):
    return factories.user_with_roles("organizer", ("organizers",))


@pytest.fixture
def worker(db):
    return factories.user_with_roles("worker", ("workers",))


@pytest.fixture
def other_worker(db):
    return factories.user_with_roles("worker2", ("workers",))


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def api_client():
    return client_for


@pytest.fixture
def dataset(organizer):
    return factories.DatasetFactory(organizers=[organizer])


def png_bytes(size=(64, 48), colour=(200, 30, 30), seed: int | None = None) -> bytes:
    image = PILImage.new("RGB", size, colour)
    if seed is not None:
        import numpy as np

        rng = np.random.default_rng(seed)
        image = PILImage.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def leased_task(body: dict):
    """The task of an assignment as the API handed it out: leases name no task (only their assignment) and
    their image by an opaque reference (annotation/imagerefs.py), so tests look the task up server-side."""
    from annotation.models import Assignment

    return Assignment.objects.select_related("task").get(pk=body["id"]).task
