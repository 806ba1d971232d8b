"""The Crowds page in real Chromium: the organizer approves many study-link completion codes at once, by
selecting every row not yet redeemed, or by pasting the marketplace's list; each code gets its outcome."""

from __future__ import annotations

import pytest
from django.test import Client
from playwright.sync_api import expect

from crowd.models import BundleSize, CompletionRedemption, StudyLink
from tests import factories
from tests.browser_fixtures import sign_in
from tests.crowd.providers.test_external_link import finish
from tests.e2e.test_accessibility import violations

pytestmark = pytest.mark.browser


def test_an_organizer_approves_many_completion_codes_at_once(page, live_server):
    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="pets")
    BundleSize.objects.create(dataset=dataset, kind="binary_vote", size=3)
    factories.TaskFactory.create_batch(9, image__dataset=dataset)  # three participants' bundles of three
    link = StudyLink.objects.create(dataset=dataset, kind="binary_vote", participant_param="PID")
    codes = {name: finish(Client(), link, name)["completion"]["code"] for name in ("ann", "ben", "cy")}

    sign_in(page, live_server.url, "olga", f"/organize/datasets/{dataset.pk}/crowds/")
    page.wait_for_load_state("networkidle")
    page.locator("#links tbody tr").first.get_by_role("button", name="Completions").click()
    rows = page.locator("#completions tbody tr")
    expect(rows).to_have_count(3)
    page.get_by_label("Select ann's code").check()
    page.get_by_label("Select ben's code").check()
    page.get_by_role("button", name="Approve 2 selected").click()
    expect(page.locator("#redeem-status")).to_have_text("2 accepted, 0 accepted before, 0 refused.")
    expect(rows.filter(has_text="ann").locator(".outcome")).to_have_text("accepted")
    assert CompletionRedemption.objects.count() == 2

    # The marketplace's list: cy's code, ann's again, and a code reported for the wrong participant.
    page.get_by_label("Many codes").fill(f"cy,{codes['cy']}\nann,{codes['ann']}\nben,{codes['cy']}\n")
    page.get_by_role("button", name="Check and accept all").click()
    expect(page.locator("#redeem-status")).to_have_text("1 accepted, 1 accepted before, 1 refused.")
    expect(page.locator("#redeem-error")).to_contain_text("ben")
    expect(rows.filter(has_text="cy").locator(".outcome")).to_have_text("accepted")
    expect(rows.filter(has_text="ann").locator(".outcome")).to_have_text("accepted before")
    assert CompletionRedemption.objects.count() == 3
    expect(page.locator("#completions tbody input[type=checkbox]")).to_have_count(
        0
    )  # nothing left to approve
    assert violations(page) == []
    assert page.console_errors == []
