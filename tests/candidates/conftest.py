"""Fixtures for the candidate import tests: a loopback site the settings allow, and a second one they refuse."""

from __future__ import annotations

import pytest

from tests import factories
from tests.candidates.server import Site


@pytest.fixture
def site():
    with Site() as running:
        yield running


@pytest.fixture
def refused_site():
    """Another loopback server: not on the allow-list, so nothing may ever reach it."""
    with Site() as running:
        yield running


@pytest.fixture
def candidate_settings(settings, site):
    settings.CROWDLABEL = {
        **settings.CROWDLABEL,
        "CANDIDATE_ALLOWED_HOSTS": [f"127.0.0.1:{site.port}"],
        "CANDIDATE_CONCURRENCY": 4,
        "CANDIDATE_HOST_INTERVAL_SECONDS": 0.0,
        "CANDIDATE_ATTEMPTS": 2,
        "CANDIDATE_BACKOFF_SECONDS": 0.01,
        "CANDIDATE_TIMEOUT_SECONDS": 1.5,
        "CANDIDATE_TOTAL_SECONDS": 6.0,
        "MAX_IMAGE_BYTES": 200_000,
    }
    return settings


@pytest.fixture
def dog(db):
    return factories.ConceptFactory(wnid="n02084071", name="dog, domestic dog")


@pytest.fixture
def dataset(organizer):
    return factories.DatasetFactory(organizers=[organizer], name="pets")
