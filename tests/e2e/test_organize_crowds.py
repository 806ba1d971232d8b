"""The Crowds page in real headless Chromium: an organizer creates a study link for an external crowd, a
participant works through it, the organizer reads the completion with its code and pay recommendation, accepts
the code once (a replay is refused by name), and closes the link. axe finds no WCAG 2.1 A/AA violation."""

from __future__ import annotations

import pytest
from django.test import Client
from playwright.sync_api import expect

from crowd.models import BundleSize, StudyLink
from tests import factories
from tests.browser_fixtures import sign_in
from tests.crowd.providers.test_external_link import finish
from tests.e2e.test_accessibility import violations

pytestmark = pytest.mark.browser


def test_an_organizer_runs_an_external_crowd_through_a_study_link(page, live_server):
    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="pets")
    BundleSize.objects.create(dataset=dataset, kind="binary_vote", size=3)
    factories.TaskFactory.create_batch(6, image__dataset=dataset)

    sign_in(page, live_server.url, "olga", f"/organize/datasets/{dataset.pk}/")
    page.get_by_role("link", name="Crowds").click()
    expect(page.locator("h1")).to_have_text("pets: crowds")
    expect(page.locator("#links-status")).to_have_text("No study link yet.")
    page.get_by_label("Task kind").select_option("binary_vote")
    page.get_by_label("Participant id parameter").fill("PID")
    page.get_by_role("button", name="Create link").click()
    expect(page.locator("#link-status")).to_have_text("Created the binary_vote link.")
    row = page.locator("#links tbody tr").first
    link = StudyLink.objects.get(dataset=dataset)
    expect(row.locator(".link-url")).to_have_text(
        f"{live_server.url}/study/{link.key}/?PID={{{{participant id}}}}"
    )
    page.get_by_role("button", name="Create link").click()  # the same kind again
    expect(page.locator("#link-error")).to_contain_text("unique")

    code = finish(Client(), link, "alice")["completion"]["code"]
    row.get_by_role("button", name="Completions").click()
    completions = page.locator("#completions tbody tr")
    expect(completions).to_have_count(1)
    expect(completions.first).to_contain_text("alice")
    expect(completions.first).to_contain_text(code)
    expect(completions.first).to_contain_text("3 / 3")
    assert violations(page) == []

    page.get_by_label("Participant id", exact=True).fill("alice")
    page.get_by_label("Completion code").fill(code)
    page.get_by_role("button", name="Check and accept code").click()
    expect(page.locator("#redeem-status")).to_contain_text("Accepted: alice's code")
    expect(completions.first.locator("td").nth(6)).to_have_text("yes")  # after the select column
    page.get_by_label("Participant id", exact=True).fill("alice")
    page.get_by_label("Completion code").fill(code)
    page.get_by_role("button", name="Check and accept code").click()
    expect(page.locator("#redeem-error")).to_contain_text("redeemed already")

    row.get_by_role("button", name="Close link").click()
    expect(page.locator("#links tbody tr .state").first).to_have_text("closed")
    link.refresh_from_db()
    assert link.active is False
    page.set_viewport_size({"width": 390, "height": 844})
    assert violations(page) == []
    # the two refusals this test asked for, and nothing else (no script error, no CSP report)
    assert page.console_errors == [
        "Failed to load resource: the server responded with a status of 400 (Bad Request)",
        "Failed to load resource: the server responded with a status of 409 (Conflict)",
    ]
