"""Scoped invitations and study links in real headless Chromium (issue 34): the organizer picks the datasets on
the People page (their own datasets only, the current one ticked), the invitee sees them on the accept page, and
the People page shows each worker's datasets; a study link's datasets are picked and listed on the Crowds
page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.models import DatasetGrant
from crowd.models import StudyLink
from tests import factories
from tests.browser_fixtures import sign_in
from tests.e2e.test_accessibility import violations

pytestmark = pytest.mark.browser


@pytest.fixture
def datasets(live_server):
    olga = factories.user_with_roles("olga", ("organizers",))
    street = factories.DatasetFactory(name="street-scenes", organizers=[olga])
    birds = factories.DatasetFactory(name="garden-birds", organizers=[olga])
    factories.DatasetFactory(
        name="someone-elses", organizers=[factories.user_with_roles("omar", ("organizers",))]
    )
    return street, birds


def test_a_scoped_invitation_made_on_the_page_shows_its_datasets_on_the_people_page(
    page, chromium, live_server, datasets
):
    street, birds = datasets
    base = live_server.url
    sign_in(page, base, "olga")
    page.goto(f"{base}/organize/datasets/{street.pk}/people/")
    picker = page.locator("#invite-scope")
    expect(picker.locator(".dataset-choices label")).to_have_count(2)  # only olga's datasets are offered
    expect(picker).not_to_contain_text("someone-elses")
    expect(picker.get_by_label("street-scenes")).to_be_checked()  # the current dataset, ticked
    expect(picker.get_by_label("garden-birds")).not_to_be_checked()
    picker.get_by_label("garden-birds").check()
    page.get_by_role("button", name="Create invitation link").click()
    expect(page.locator("#issued-url")).to_have_value(re.compile(r"/invite/[-\w]{40,}/$"))
    url = page.locator("#issued-url").input_value()
    expect(page.locator("#invitations tbody tr .scope")).to_have_text("street-scenes, garden-birds")

    other = chromium.new_context()
    invitee = other.new_page()
    invitee.goto(url)
    expect(invitee.locator("#invite-scope")).to_have_text("You will work on street-scenes, garden-birds.")
    invitee.get_by_label("Username").fill("walt")
    invitee.get_by_label("Password").fill("a-long-passphrase-42")
    invitee.get_by_role("button", name="Create my account").click()
    expect(invitee.locator("h1")).to_have_text("Welcome, walt")
    other.close()
    assert set(
        DatasetGrant.objects.filter(worker__user__username="walt").values_list("dataset", flat=True)
    ) == {
        street.pk,
        birds.pk,
    }

    # An invitation with nothing ticked makes an unscoped worker, and the page says so.
    picker.locator(".select-all").check()
    picker.locator(".select-all").uncheck()
    expect(picker.get_by_label("street-scenes")).not_to_be_checked()
    page.get_by_role("button", name="Create invitation link").click()
    expect(page.locator("#invitations tbody tr")).to_have_count(2)
    expect(page.locator("#invitations tbody tr").first.locator(".scope")).to_have_text(
        "every dataset (unscoped)"
    )

    page.reload()
    row = page.locator("#workers tbody tr", has_text="walt")
    expect(row.locator(".scope")).to_have_text("street-scenes, garden-birds")
    # The worker is listed on the other dataset's People page too, with the same datasets.
    page.goto(f"{base}/organize/datasets/{birds.pk}/people/")
    expect(page.locator("#workers tbody tr", has_text="walt").locator(".scope")).to_have_text(
        "street-scenes, garden-birds"
    )
    expect(page.locator("#invite-scope .dataset-choices label")).to_have_count(2)
    assert violations(page) == []
    assert page.console_errors == []


def test_a_study_link_made_on_the_crowds_page_names_its_datasets(page, live_server, datasets):
    street, birds = datasets
    base = live_server.url
    sign_in(page, base, "olga")
    page.goto(f"{base}/organize/datasets/{street.pk}/crowds/")
    picker = page.locator("#link-scope")
    expect(picker.get_by_label("street-scenes")).to_be_checked()
    expect(picker.get_by_label("street-scenes")).to_be_disabled()  # a link's own dataset is always in it
    expect(picker).not_to_contain_text("someone-elses")
    picker.get_by_label("garden-birds").check()
    page.get_by_role("button", name="Create link").click()
    expect(page.locator("#links tbody tr .scope")).to_have_text("street-scenes, garden-birds")
    link = StudyLink.objects.get()
    assert sorted(link.datasets.values_list("pk", flat=True)) == sorted([street.pk, birds.pk])
    assert violations(page) == []
    assert page.console_errors == []


def test_the_people_page_changes_an_accepted_workers_datasets(page, live_server, datasets):
    street, birds = datasets
    walt = factories.user_with_roles("walt", ("workers",))
    for dataset in (street, birds):
        DatasetGrant.objects.create(worker=walt.worker, dataset=dataset)
    base = live_server.url
    sign_in(page, base, "olga")
    page.goto(f"{base}/organize/datasets/{street.pk}/people/")
    row = page.locator("#workers tbody tr", has_text="walt")
    expect(row.locator(".scope")).to_have_text("street-scenes, garden-birds")
    row.get_by_role("button", name="Change the datasets of walt").click()
    editor = page.get_by_role("form", name="Datasets walt may work on")
    expect(editor.get_by_label("street-scenes")).to_be_checked()
    expect(editor).not_to_contain_text("someone-elses")
    assert violations(page) == []
    editor.get_by_label("garden-birds").uncheck()
    editor.get_by_role("button", name="Save datasets").click()
    expect(row.locator(".scope")).to_have_text("street-scenes")
    assert list(DatasetGrant.objects.filter(worker=walt.worker).values_list("dataset", flat=True)) == [
        street.pk
    ]
    # The last dataset cannot be taken away: the page says why and nothing changes.
    row.get_by_role("button", name="Change the datasets of walt").click()
    editor.get_by_label("street-scenes").uncheck()
    editor.get_by_role("button", name="Save datasets").click()
    expect(page.locator("#workers-error")).to_contain_text("keeps at least one dataset")
    assert DatasetGrant.objects.filter(worker=walt.worker).count() == 1
    assert page.console_errors == []
