"""The image page in real Chromium: an image nobody has worked on is deleted from its page; one with work is
kept, and the page says why."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation import vote_tasks
from annotation.models import Image
from tests import factories
from tests.browser_fixtures import sign_in
from tests.conftest import png_bytes

pytestmark = pytest.mark.browser


def test_an_untouched_image_is_deleted_from_its_page_and_a_worked_one_is_kept(page, live_server):
    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="pets")
    untouched, worked = (
        factories.ImageFactory(dataset=dataset, width=64, height=48, file__data=png_bytes(seed=k))
        for k in (1, 2)
    )
    vote_tasks.vote_tasks_create(
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
