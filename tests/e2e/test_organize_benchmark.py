"""The Benchmark page in real headless Chromium: preview a split version and freeze it, export COCO with a
progress bar that reaches 100%, download the archive, and load it with pycocotools."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from playwright.sync_api import expect

from annotation.models import AuditEntry, Box, BoxState
from benchmark.models import ExportJob, SplitVersion
from tests import factories
from tests.benchmark.conftest import finalize

pytestmark = pytest.mark.browser

PASSWORD = "pass-for-tests-123"


def test_an_organizer_freezes_a_split_exports_coco_and_downloads_it(page, live_server, tmp_path):
    coco = pytest.importorskip("pycocotools.coco")
    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="boxes")
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    for k in range(12):
        image = factories.ImageFactory(dataset=dataset, width=200, height=100)
        Box.objects.create(
            image=image, concept=dog, x1=10 + k, y1=5, x2=60 + k, y2=70, state=BoxState.ACCEPTED
        )
    finalize(dataset)

    page.goto(f"{live_server.url}/accounts/login/?next=/organize/datasets/{dataset.pk}/benchmark/")
    page.get_by_label("Username").fill("olga")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state("networkidle")  # the modules listen before a click submits the form

    page.get_by_label("Seed").fill("7")
    page.get_by_role("button", name="Preview split").click()
    row = page.locator("#versions tbody tr[data-version='1']")
    expect(row.locator(".counts")).to_contain_text("train")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Freeze version 1").click()
    expect(row).to_contain_text("frozen")
    version = SplitVersion.objects.get(dataset=dataset)
    assert version.frozen and version.seed == 7

    page.get_by_label("Format").select_option("coco")
    page.get_by_role("button", name="Start export").click()
    bar = page.locator("#export-bar")
    expect(page.locator("#export-status")).to_contain_text("done")
    total = bar.get_attribute("aria-valuemax")
    assert int(total) > 0 and bar.get_attribute("aria-valuenow") == total  # 100% when done
    # What the export holds, from its manifest: every box final, no image left out.
    summary = page.locator("#export-completeness-summary")
    expect(summary).to_contain_text("Labels: final only. No image left out. Everything accepted is final.")
    with page.expect_download() as download_info:
        page.locator("#export-download").click()
    path = tmp_path / "export.zip"
    download_info.value.save_as(path)
    archive = zipfile.ZipFile(io.BytesIO(path.read_bytes()))
    train = archive.read("annotations/instances_train.json")
    (tmp_path / "train.json").write_bytes(train)
    api = coco.COCO(str(tmp_path / "train.json"))
    assert len(api.getImgIds()) == version.manifest["counts"]["train"]
    assert api.loadCats(api.getCatIds())[0]["name"] == "dog"
    assert len(api.getAnnIds()) == len(api.getImgIds())  # one box per image
    assert json.loads(archive.read("manifest.json"))["format"] == "coco"

    page.get_by_label("Include provisional boxes").check()
    page.get_by_role("button", name="Start export").click()
    expect(summary).to_contain_text("Labels: final and provisional.")
    assert ExportJob.objects.filter(dataset=dataset, include_provisional=True, state="done").count() == 1
    actions = set(AuditEntry.objects.filter(dataset=dataset).values_list("action", flat=True))
    assert actions == {"splits.compute", "splits.freeze", "export.start"}
    assert page.console_errors == []


def test_an_organizer_creates_a_challenge_adds_a_team_and_sees_its_leaderboard(page, live_server):
    from benchmark.models import Challenge
    from tests.benchmark.test_api import perfect_results, submit

    organizer = factories.user_with_roles("olga", ("organizers",))
    factories.user_with_roles("alice", ())
    dataset = factories.DatasetFactory(organizers=[organizer], name="challenged")
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    for k in range(12):
        image = factories.ImageFactory(dataset=dataset, width=200, height=100)
        Box.objects.create(
            image=image, concept=dog, x1=10 + k, y1=5, x2=60 + k, y2=70, state=BoxState.ACCEPTED
        )
    finalize(dataset)
    page.goto(f"{live_server.url}/accounts/login/?next=/organize/datasets/{dataset.pk}/benchmark/")
    page.get_by_label("Username").fill("olga")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state("networkidle")  # the modules listen before a click submits the form
    page.get_by_role("button", name="Preview split").click()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Freeze version 1").click()
    expect(page.locator("#versions tbody tr[data-version='1']")).to_contain_text("frozen")

    form = page.locator("#challenge-form")
    form.get_by_label("Name").fill("det-2026")
    form.get_by_label("Protocol").select_option("coco")
    form.get_by_role("button", name="Create challenge").click()
    expect(page.locator("#challenge-title")).to_contain_text("det-2026: ranked by AP")
    expect(page.locator("#leaderboard tbody")).to_contain_text("No scored submission yet.")
    team = page.locator("#team-form")
    team.get_by_label("Team name").fill("alices")
    team.get_by_label("Members (usernames, comma-separated)").fill("alice")
    team.get_by_role("button", name="Add team").click()
    expect(page.locator("#teams tbody tr")).to_contain_text("alice")

    challenge = Challenge.objects.get(name="det-2026")
    from django.contrib.auth import get_user_model

    assert (
        submit(
            get_user_model().objects.get(username="alice"), challenge, perfect_results(challenge)
        ).status_code
        == 201
    )
    page.get_by_role("button", name="Leaderboard of det-2026").click()
    expect(page.locator("#leaderboard tbody tr[data-team='alices']")).to_contain_text("AP 1.0000")
    assert page.console_errors == []


def test_an_organizer_holds_out_a_source_with_a_rule_and_filters_the_grid_by_split_and_stage(
    page, live_server
):
    organizer = factories.user_with_roles("rita", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="held-out")
    for n in range(4):
        factories.ImageFactory(dataset=dataset, source=f"lab-b/{n}", original_name=f"lab-b-{n}.png")
    for n in range(6):
        factories.ImageFactory(dataset=dataset, source="flickr", original_name=f"flickr-{n}.png")

    page.goto(f"{live_server.url}/accounts/login/?next=/organize/datasets/{dataset.pk}/benchmark/")
    page.get_by_label("Username").fill("rita")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state("networkidle")

    rules = page.locator("#source-rules")
    rules.fill("lab-b=0:1:x")
    page.get_by_role("button", name="Preview split").click()
    expect(page.locator("#split-error")).to_contain_text("line 1")
    assert not SplitVersion.objects.filter(dataset=dataset).exists()
    rules.fill("lab-b=0:1")  # val 0, test 1: every lab-b image held out for test
    page.get_by_label("Train", exact=True).fill("1")
    page.get_by_label("Val", exact=True).fill("0")
    page.get_by_label("Test", exact=True).fill("0")
    page.get_by_role("button", name="Preview split").click()
    row = page.locator("#versions tbody tr[data-version='1']")
    expect(row.locator(".rules")).to_contain_text("lab-b: 0 / 0 / 1")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Freeze version 1").click()
    expect(row).to_contain_text("frozen")

    page.goto(f"{live_server.url}/organize/datasets/{dataset.pk}/images/")
    expect(page.locator("#grid-status")).to_have_text("10 images")
    page.locator("#filters select[name='split']").select_option("test")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#grid-status")).to_have_text("4 images")
    expect(page.locator("#grid figcaption").first).to_contain_text("lab-b-")
    page.locator("#filters select[name='split']").select_option("")
    page.locator("#filters select[name='stage']").select_option("unstarted")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#grid-status")).to_have_text("10 images")
    assert page.console_errors == []
