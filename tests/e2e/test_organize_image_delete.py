"""The image page in real Chromium: an image nobody has worked on is deleted from its page; one with work is
kept, and the page says why; any image is excluded (and included again) from its page, and the images page
marks and filters excluded images."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import AuditEntry, Image
from consensus import binary_vote
from tests import factories
from tests.browser_fixtures import sign_in
from tests.conftest import png_bytes
from tests.e2e.test_accessibility import violations

pytestmark = pytest.mark.browser


def test_an_untouched_image_is_deleted_from_its_page_and_a_worked_one_is_kept(page, live_server):
    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="pets")
    untouched, worked = (
        factories.ImageFactory(dataset=dataset, width=64, height=48, file__data=png_bytes(seed=k))
        for k in (1, 2)
    )
    binary_vote.vote_tasks_create(
        dataset=dataset, concept=factories.ConceptFactory(name="dog"), images=[worked]
    )

    sign_in(page, live_server.url, "olga", f"/organize/datasets/{dataset.pk}/images/{worked.pk}/")
    page.wait_for_load_state("networkidle")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete this image…").click()
    expect(page.locator("#delete-image-error")).to_contain_text("labels are kept")
    assert Image.objects.filter(pk=worked.pk).exists()

    page.goto(f"{live_server.url}/organize/datasets/{dataset.pk}/images/{untouched.pk}/")
    page.wait_for_load_state("networkidle")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete this image…").click()
    page.wait_for_url(f"{live_server.url}/organize/datasets/{dataset.pk}/images/")
    assert not Image.objects.filter(pk=untouched.pk).exists()
    assert [e for e in page.console_errors if "status of 409" not in e] == []


def test_a_worked_on_image_is_excluded_and_included_again_from_its_page(page, live_server):
    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="pets")
    worked, other = (
        factories.ImageFactory(dataset=dataset, width=64, height=48, file__data=png_bytes(seed=k))
        for k in (3, 4)
    )
    binary_vote.vote_tasks_create(
        dataset=dataset, concept=factories.ConceptFactory(name="dog"), images=[worked, other]
    )

    sign_in(page, live_server.url, "olga", f"/organize/datasets/{dataset.pk}/images/{worked.pk}/")
    expect(page.locator("#exclusion-status")).to_contain_text("Included")
    assert violations(page) == []
    page.get_by_label("Reason (for the audit trail)").fill("a blurred duplicate")
    page.get_by_role("button", name="Exclude this image").click()
    expect(page.locator("#exclusion-status")).to_contain_text("Excluded since")
    worked.refresh_from_db()
    assert worked.excluded_at is not None
    assert AuditEntry.objects.get(action="image.exclude").parameters["reason"] == "a blurred duplicate"

    # The images page marks it and filters by it.
    page.goto(f"{live_server.url}/organize/datasets/{dataset.pk}/images/")
    expect(page.locator(f"figure[data-image='{worked.pk}'] figcaption")).to_contain_text("excluded")
    expect(page.locator(f"figure[data-image='{other.pk}'] figcaption")).not_to_contain_text("excluded")
    page.get_by_label("Excluded").select_option("true")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#grid figure")).to_have_count(1)
    assert violations(page) == []

    page.goto(f"{live_server.url}/organize/datasets/{dataset.pk}/images/{worked.pk}/")
    page.get_by_role("button", name="Include this image again").click()
    expect(page.locator("#exclusion-status")).to_contain_text("Included")
    worked.refresh_from_db()
    assert worked.excluded_at is None
    assert page.console_errors == []
