"""The Predictions page in real headless Chromium: an organizer uploads a predictions file with a bad row and
reads each problem (nothing stored), fixes it, sees the set listed with its counts, and uploading the same file
again says it was imported before. axe finds no WCAG 2.1 A/AA violation."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from predictions.models import BoxPrediction, PredictionSet
from tests import factories
from tests.browser_fixtures import sign_in
from tests.e2e.test_accessibility import violations

pytestmark = pytest.mark.browser


def test_an_organizer_imports_predictions_and_reads_the_problems_of_a_bad_file(page, live_server):
    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="pets")
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    dataset.concepts.add(dog)
    image = factories.ImageFactory(dataset=dataset, original_name="a.jpg", width=64, height=48)
    good = {"image_id": image.pk, "wnid": "n02084071", "bbox": [1, 2, 30, 20], "score": 0.75}
    bad = json.dumps([good, good | {"bbox": [50, 0, 30, 20]}]).encode()
    fixed = json.dumps(
        {"detections": [good], "classifications": [{"file_name": "a.jpg", "wnid": "n02084071", "score": 0.9}]}
    ).encode()

    sign_in(page, live_server.url, "olga", f"/organize/datasets/{dataset.pk}/")
    page.get_by_role("link", name="Predictions").click()
    expect(page.locator("h1")).to_have_text("pets: model predictions")
    expect(page.locator("#sets-status")).to_have_text("No predictions yet.")

    page.set_input_files(
        "#predictions-file", {"name": "bad.json", "mimeType": "application/json", "buffer": bad}
    )
    page.get_by_role("button", name="Import predictions").click()
    expect(page.locator("#predictions-error")).to_contain_text(
        "1 problem(s) in the predictions; nothing was stored."
    )
    problems = page.locator("#problems tbody tr")
    expect(problems).to_have_count(1)
    expect(problems.first).to_contain_text("detections[1]")
    expect(problems.first).to_contain_text("outside_image")
    assert not PredictionSet.objects.exists()

    page.set_input_files(
        "#predictions-file", {"name": "fixed.json", "mimeType": "application/json", "buffer": fixed}
    )
    page.get_by_label("Model").fill("yolo")
    page.get_by_role("button", name="Import predictions").click()
    expect(page.locator("#predictions-status")).to_have_text("fixed.json: 1 boxes and 1 class scores stored.")
    expect(page.locator("#problems-box")).to_be_hidden()
    row = page.locator("#sets tbody tr").first
    expect(row).to_contain_text("fixed.json")
    expect(row).to_contain_text("yolo")
    expect(page.locator("#sets-status")).to_have_text("1 prediction set")
    assert violations(page) == []

    page.set_input_files(
        "#predictions-file", {"name": "again.json", "mimeType": "application/json", "buffer": fixed}
    )
    page.get_by_role("button", name="Import predictions").click()
    expect(page.locator("#predictions-status")).to_contain_text("imported before as “fixed.json”")
    assert PredictionSet.objects.count() == 1 and BoxPrediction.objects.count() == 1
