"""Browser fixtures for every test package: Debian's own Chromium driven headless through Playwright
(Playwright's browser downloads are never used). Loaded as a pytest plugin from tests/conftest.py."""

from __future__ import annotations

import shutil
import time
from collections import deque

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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item, so a fixture's teardown can tell that its test failed."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


@pytest.fixture
def page(chromium, request):
    """A fresh browser context (no cookies, no storage) per test; console errors are collected.

    When the test fails, its report gets what the page showed then and its last requests with their status and
    time (`Captured stdout teardown`): a wait that timed out once under load says what it was waiting behind (a
    request still running, a retried answer, a status line) instead of only "Timeout 15000ms exceeded"."""
    context = chromium.new_context(viewport={"width": 1100, "height": 800})
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda msg: msg.type == "error" and page.console_errors.append(msg.text))
    page.on("pageerror", lambda exc: page.console_errors.append(str(exc)))
    requests = _request_log(page)
    try:
        yield page
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            print(_page_snapshot(page, requests))
        context.close()


def _request_log(page, keep: int = 30) -> deque:
    """The page's last `keep` requests: method, URL, when it started (s since the page opened), its status or
    failure, how long it took; a request still running shows as such."""
    opened = time.monotonic()
    log: deque = deque(maxlen=keep)
    started: dict = {}

    def begin(req):
        entry = {
            "method": req.method,
            "url": req.url,
            "at": round(time.monotonic() - opened, 2),
            "status": "running",
        }
        started[id(req)] = (entry, time.monotonic())
        log.append(entry)

    def end(req, status):
        entry, t0 = started.pop(id(req), (None, None))
        if entry is not None:
            entry["status"] = status
            entry["took"] = round(time.monotonic() - t0, 2)

    page.on("request", begin)
    page.on("requestfinished", lambda req: end(req, _status_of(req)))
    page.on("requestfailed", lambda req: end(req, f"failed: {req.failure}"))
    return log


def _status_of(req):
    try:
        response = req.response()
    except Exception:  # the page or context went away mid-request
        return "finished"
    return response.status if response is not None else "finished"


def _page_snapshot(page, requests) -> str:
    """What a failing browser test's page showed: its URL, status line, task body's data attributes, console
    errors and last requests. Best effort: a page that has crashed or closed says so."""
    lines = ["--- the page when the test failed ---"]
    try:
        lines.append(f"url: {page.url}")
        shown = page.evaluate(
            """() => {
              const text = (id) => { const e = document.getElementById(id); return e ? e.textContent.trim() : null; };
              const body = document.getElementById("task-body");
              return {status: text("status"), answered: text("answered"), unsaved: text("unsaved"),
                      task_body: body ? Object.assign({}, body.dataset) : null,
                      busy: body ? body.getAttribute("aria-busy") : null};
            }"""
        )
        lines.extend(f"{key}: {value}" for key, value in shown.items() if value not in (None, ""))
    except Exception as error:  # noqa: BLE001 -- a snapshot must never hide the test's own failure
        lines.append(f"(page not readable: {error})")
    lines.extend(f"console: {message}" for message in page.console_errors)
    lines.extend(
        f"request: {r['at']:>7}s {r['method']} {r['url']} -> {r['status']} {r.get('took', '')}"
        for r in requests
    )
    return "\n".join(lines)


def sign_in(page, base_url: str, username: str, next_path: str | None = None) -> None:
    """Sign in through the login page as a person would (the test password of `factories.user_with_roles`)."""
    page.goto(f"{base_url}/accounts/login/" + (f"?next={next_path}" if next_path else ""))
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("pass-for-tests-123")
    page.get_by_role("button", name="Sign in").click()
