"""Browser fixtures for every test package: Debian's own Chromium driven headless through Playwright
(Playwright's browser downloads are never used). Loaded as a pytest plugin from tests/conftest.py."""

from __future__ import annotations

import shutil

import pytest
from django.db import connections

CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def chromium(monkeypatch):
    """One browser per test.

    Playwright's sync API keeps an asyncio loop marked as running in this thread while it is open. That trips
    Django's async-safety check on every ORM call although the test's code never runs concurrently with the
    loop (Playwright switches greenlets), so the check is lifted only while the browser lives; never make this
    fixture session-wide. It also makes Django hand this thread a second, context-local database connection,
    which must be closed before leaving Playwright, or PostgreSQL refuses to drop the test database."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    executable = shutil.which("chromium")
    if executable is None:
        pytest.skip("needs the chromium browser (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
            connections.close_all()


@pytest.fixture
def page(chromium):
    """A fresh browser context (no cookies, no storage) per test; console errors are collected."""
    context = chromium.new_context(viewport={"width": 1100, "height": 800})
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda msg: msg.type == "error" and page.console_errors.append(msg.text))
    page.on("pageerror", lambda exc: page.console_errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()


def sign_in(page, base_url: str, username: str, next_path: str | None = None) -> None:
    """Sign in through the login page as a person would (the test password of `factories.user_with_roles`)."""
    page.goto(f"{base_url}/accounts/login/" + (f"?next={next_path}" if next_path else ""))
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("pass-for-tests-123")
    page.get_by_role("button", name="Sign in").click()
