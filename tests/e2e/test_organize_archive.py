"""The dataset list in real Chromium: a dataset that was worked on is archived (it moves to "Archived" and its
work stops being handed out) and restored."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Dataset
from consensus import binary_vote
from tests import factories
from tests.browser_fixtures import sign_in

pytestmark = pytest.mark.browser


def test_an_organizer_archives_a_worked_dataset_and_restores_it(page, live_server):
    organizer = factories.user_with_roles("olga", ("organizers",))
    worked = factories.DatasetFactory(organizers=[organizer], name="worked-on")
    factories.DatasetFactory(organizers=[organizer], name="still-active")
    images = factories.ImageFactory.create_batch(2, dataset=worked)
    binary_vote.vote_tasks_create(dataset=worked, concept=factories.ConceptFactory(name="dog"), images=images)

    sign_in(page, live_server.url, "olga", "/organize/")
    page.wait_for_load_state("networkidle")
    row = page.locator("#datasets tbody tr", has_text="worked-on")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Archive…").click()
    expect(page.locator("#delete-status")).to_have_text("Archived worked-on.")
    expect(page.locator("#datasets tbody tr", has_text="worked-on")).to_have_count(0)
    archived = page.locator("#archived tbody tr", has_text="worked-on")
    expect(archived).to_have_count(1)
    expect(page.locator("#datasets tbody tr", has_text="still-active")).to_have_count(1)
    assert Dataset.objects.get(pk=worked.pk).archived_at is not None

    # Its pages still open, and say it is archived.
    archived.get_by_role("link", name="worked-on").click()
    expect(page.locator("#archived-note")).to_contain_text("Archived on")
    page.go_back()
    page.wait_for_load_state("networkidle")
    page.locator("#archived tbody tr", has_text="worked-on").get_by_role("button", name="Restore").click()
    expect(page.locator("#delete-status")).to_contain_text("Restored worked-on")
    expect(page.locator("#datasets tbody tr", has_text="worked-on")).to_have_count(1)
    expect(page.locator("#archived")).to_have_count(0)
    assert Dataset.objects.get(pk=worked.pk).archived_at is None
    assert page.console_errors == []
