"""The Statistics page in real headless Chromium: an organizer opens it from the dataset's tabs, sees the
report's tables and its two SVG plots (drawn by the server, so the page's policy runs no script for them), picks
a split version and a detection set, and axe finds no WCAG 2.1 A/AA violation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests import factories
from tests.browser_fixtures import sign_in
from tests.conftest import client_for
from tests.e2e.test_accessibility import violations
from tests.organize.test_statistics import freeze_splits, scene

pytestmark = pytest.mark.browser


def test_an_organizer_reads_the_statistics_report_and_picks_a_detection_set(page, live_server):
    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="stats")
    dog, _ = scene(dataset, copies=3)
    freeze_splits(dataset)
    created = client_for(organizer).post(
        f"/api/v1/datasets/{dataset.pk}/detection-sets/",
        {"name": "dogs", "classes": [dog.wnid]},
        format="json",
    )
    assert created.status_code == 201, created.content
    sign_in(page, live_server.url, "olga", f"/organize/datasets/{dataset.pk}/")
    page.get_by_role("link", name="Statistics").click()
    expect(page.locator("h1")).to_have_text("stats: statistics")

    splits = page.locator("#statistics-splits tbody tr")
    expect(splits).to_have_count(3)  # train and val with their figures, test withheld
    expect(page.locator("#statistics-splits tr[data-split='test']")).to_contain_text("labels withheld")
    expect(page.locator("#scale-plot svg rect.stat-bar")).to_have_count(7 * 2)  # seven bins, train and val
    expect(page.locator("#classes-plot svg")).to_be_visible()
    expect(page.locator("#statistics-per-class tbody tr").first).to_be_visible()
    expect(page.locator("#statistics-references")).to_contain_text("ILSVRC 2015 devkit readme")
    assert violations(page) == []

    page.get_by_label("Detection set").select_option("dogs")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#statistics-version")).to_contain_text("+dogs")
    expect(page.locator("#statistics-per-class tbody")).not_to_contain_text("domestic cat")
    expect(page.locator("#statistics-per-class tbody")).to_contain_text("dog")
    assert violations(page) == []
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: the wide tables scroll, nothing breaks
    assert violations(page) == []
    assert page.console_errors == []
