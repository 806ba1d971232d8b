"""The Quality and Settings pages in real headless Chromium: the plots are drawn (a calibration heat map, gold
precision, the worker-accuracy histogram, votes per synset, reviewer items per 100 images) with their numbers
beside them; consensus settings are saved; a gold CSV with a bad line is refused line by line, a good one imported."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from consensus.models import ConsensusSettings
from gold.models import GoldItem
from tests import factories
from tests.browser_fixtures import sign_in
from tests.organize.quality_scene import quality_scene

pytestmark = pytest.mark.browser


def test_the_quality_page_draws_every_plot_with_its_numbers(page, live_server):
    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="quality")
    other = factories.DatasetFactory(organizers=[factories.user_with_roles("bob", ("organizers",))])
    quality_scene(dataset, other)
    sign_in(page, live_server.url, "olga", f"/organize/datasets/{dataset.pk}/quality/")

    expect(page.locator("#quality-status")).to_contain_text("decided questions")
    expect(page.locator("#calibration-status")).to_contain_text("3 calibration images")
    cells = page.locator("#calibration-plot svg rect")
    expect(cells.first).to_be_visible()
    cap = page.locator("#calibration-table tbody tr").count()
    assert cells.count() == cap > 0  # one cell drawn per number listed
    expect(page.locator("#precision tbody tr[data-kind='image_verify']")).to_contain_text("66.7%")
    expect(page.locator("#precision-plot svg rect")).to_have_count(2)
    histogram = page.locator("#histogram-plot svg rect")
    expect(histogram).to_have_count(10)
    assert histogram.nth(9).get_attribute("data-value") == "2"
    expect(page.locator("#hardest tbody tr").first).to_have_attribute("data-wnid", "n02121808")
    expect(page.locator("#difficulty-plot svg rect")).to_have_count(3)
    # The review load: cats first (one question waiting of 2 images), then dogs (one decided of 6 images).
    load = page.locator("#review-load tbody tr")
    expect(load).to_have_count(2)
    expect(load.first).to_have_attribute("data-wnid", "n02121808")
    expect(load.first.locator("td").last).to_have_text("50.00")
    expect(load.nth(1).locator("td").last).to_have_text("16.67")
    expect(load.nth(1).locator("td").nth(2)).to_have_text("3.33")  # 20 votes over 6 images
    expect(page.locator("#review-load-plot svg rect")).to_have_count(2)
    assert page.console_errors == []


def test_settings_are_saved_and_gold_csv_refusals_are_listed(page, live_server):
    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="settings")
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    factories.ImageFactory(dataset=dataset, original_name="dog0.jpg")
    sign_in(page, live_server.url, "olga", f"/organize/datasets/{dataset.pk}/settings/")

    form = page.locator("#consensus-form")
    expect(form.get_by_label("Vote cap (then review)")).to_have_value("12")
    form.get_by_label("Target precision (accept at P(positive) ≥)").fill("0.97")
    form.get_by_label("Vote cap (then review)").fill("15")
    form.get_by_role("button", name="Save consensus settings").click()
    expect(form.locator(".status")).to_contain_text("Saved")
    stored = ConsensusSettings.objects.get(dataset=dataset)
    assert (stored.target_precision, stored.vote_cap) == (0.97, 15)

    importer = page.locator("#gold-import")
    importer.get_by_label("or paste it").fill(
        f"kind,concept,image,answer\nimage_verify,{dog.wnid},dog0.jpg,yes\nimage_verify,{dog.wnid},gone.jpg,yes\n"
    )
    importer.get_by_role("button", name="Import gold items").click()
    expect(page.locator("#gold-import-errors li")).to_contain_text("line 3")
    assert not GoldItem.objects.exists()
    importer.get_by_label("or paste it").fill(
        f"kind,concept,image,answer\nimage_verify,{dog.wnid},dog0.jpg,yes\n"
    )
    importer.get_by_role("button", name="Import gold items").click()
    expect(page.locator("#gold-import-status")).to_contain_text("1 gold items imported")
    expect(page.locator("#gold-items tbody tr")).to_have_count(1)
    assert [e for e in page.console_errors if "status of 400" not in e] == []  # the refused import
