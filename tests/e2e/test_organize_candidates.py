"""The Candidates page in real headless Chromium: an organizer reads a class's search queries, imports a URL
list found with them (one row refused, one download failing) from a loopback site, watches the import finish,
reads each failure's reason, sees the class's pool and its per-query precision, and follows "Verify this pool"
to the dataset page's verification form, filled in. axe finds no WCAG 2.1 A/AA violation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import FinalLabel
from candidates.models import Candidate
from tests import factories
from tests.annotation.imagefiles import jpeg
from tests.browser_fixtures import sign_in
from tests.candidates.server import Site
from tests.e2e.test_accessibility import violations

pytestmark = pytest.mark.browser


@pytest.fixture
def site(settings):
    with Site() as running:
        settings.CROWDLABEL = {
            **settings.CROWDLABEL,
            "CANDIDATE_ALLOWED_HOSTS": [f"127.0.0.1:{running.port}"],
            "CANDIDATE_HOST_INTERVAL_SECONDS": 0.0,
            "CANDIDATE_ATTEMPTS": 1,
        }
        yield running


def test_an_organizer_imports_a_url_list_and_follows_it_to_a_pool(page, live_server, site):
    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="pets")
    dog = factories.ConceptFactory(wnid="n02084071", name="dog, domestic dog", gloss="a domesticated canid")
    dataset.concepts.add(dog)
    site.image("/a.jpg", jpeg(1))
    site.image("/b.jpg", jpeg(2))
    listing = (
        "url,concept,query,source\n"
        f"{site.url('/a.jpg')},n02084071,dog,engine\n"
        f"{site.url('/b.jpg')},n02084071,domestic dog,engine\n"
        f"{site.url('/missing.jpg')},n02084071,dog,engine\n"
        "ftp://example.org/c.jpg,n02084071,dog,engine\n"
    )

    sign_in(page, live_server.url, "olga", f"/organize/datasets/{dataset.pk}/")
    page.get_by_role("link", name="Candidates").click()
    expect(page.locator("h1")).to_have_text("pets: candidate images")
    expect(page.locator("#imports-status")).to_have_text("No import yet.")
    expect(page.locator("#pools-status")).to_have_text("No pool yet: import a URL list.")

    page.get_by_label("Class").select_option("n02084071")
    page.get_by_role("button", name="Show queries").click()
    expect(page.locator("#queries tbody tr")).to_have_count(2)  # "dog", "domestic dog": no parents here
    expect(page.locator("#queries tbody")).to_contain_text("domestic dog")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download CSV").click()
    assert download.value.suggested_filename == "queries-n02084071.csv"

    page.set_input_files(
        "#import-file", {"name": "found.csv", "mimeType": "text/csv", "buffer": listing.encode()}
    )
    page.get_by_role("button", name="Import").click()
    expect(page.locator("#import-status")).to_contain_text("found.csv: 4 rows recorded")
    row = page.locator("#imports tbody tr").first
    expect(row.locator(".state")).to_have_text("done", timeout=60_000)  # a loaded machine downloads slowly
    expect(row).to_contain_text("4 / 4")
    expect(page.locator("#imports-status")).to_have_text("1 import, all done")
    row.get_by_role("button", name="Failures").click()
    failures = page.locator("#failures tbody")
    expect(failures.locator("tr")).to_have_count(2)
    expect(failures).to_contain_text("scheme 'ftp' is not allowed")
    expect(failures).to_contain_text("404")
    assert violations(page) == []

    expect(page.locator("#pools tbody tr[data-pool='n02084071']")).to_contain_text("dog, domestic dog")
    stored = Candidate.objects.filter(dataset=dataset, concept=dog).order_by("id")
    assert [c.query for c in stored] == ["dog", "domestic dog"]
    FinalLabel.objects.create(
        dataset=dataset, image=stored[0].image, concept=dog, present=True, source="consensus"
    )
    page.reload()
    pool_row = page.locator("#pools tbody tr[data-pool='n02084071']")
    expect(pool_row.locator("td.num")).to_have_text(["2", "2", "2"])
    pool_row.get_by_role("button", name="Per-query precision").click()
    precision = page.locator("#precision tbody tr")
    expect(precision).to_have_count(2)
    expect(precision.first).to_contain_text("100.0%")  # "dog": its image is decided, present
    expect(precision.nth(1)).to_contain_text("–")  # "domestic dog": not decided yet
    assert violations(page) == []

    pool_row.get_by_role("link", name="Verify this pool…").click()
    expect(page.locator("#start-verification input[name='concept'][value='n02084071']")).to_be_checked()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/organize/datasets/{dataset.pk}/candidates/")
    assert violations(page) == []
    assert page.console_errors == []
