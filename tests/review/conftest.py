"""Fixtures of the review tests: reviewers, boxes on images, and (for browser tests) real Chromium."""

from __future__ import annotations

import os
import shutil

import pytest

from annotation.models import Box, BoxState
from tests import factories

CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(autouse=True)
def _review_settings(settings):
    # Tests create boxes and scan at once: no settle window for in-flight transactions.
    settings.CROWDLABEL = {**settings.CROWDLABEL, "REVIEW_SCAN_SETTLE_SECONDS": 0}


@pytest.fixture
def reviewer(db):
    return factories.user_with_roles("reviewer", ("reviewers",))


@pytest.fixture
def other_reviewer(db):
    return factories.user_with_roles("reviewer2", ("reviewers",))


@pytest.fixture
def make_box():
    def make(image, concept, x1, y1, x2, y2, state=BoxState.ACCEPTED) -> Box:
        return Box.objects.create(image=image, concept=concept, x1=x1, y1=y1, x2=x2, y2=y2, state=state)

    return make


@pytest.fixture
def browser():
    """Real headless Chromium through Playwright (sync API)."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are still synchronous.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
