"""The Benchmark page's exports in real headless Chromium: every earlier export is listed with its format, time,
author and state, and its archive stays downloadable."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from playwright.sync_api import expect

from annotation.models import Box, BoxState
from benchmark import services
from benchmark.models import ExportJob
from tests import factories
from tests.benchmark.conftest import finalize
from tests.browser_fixtures import sign_in

pytestmark = pytest.mark.browser


@pytest.fixture
def boxed(live_server):
    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="boxes")
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    for k in range(4):
        image = factories.ImageFactory(dataset=dataset, width=200, height=100, original_name=f"dog-{k}.png")
        Box.objects.create(
            image=image, concept=dog, x1=10 + k, y1=5, x2=60 + k, y2=70, state=BoxState.ACCEPTED
        )
    finalize(dataset)
    return dataset, organizer


def run_export(dataset, user, format_name: str) -> ExportJob:
    job, _ = services.export_job_request(
        dataset=dataset,
        user=user,
        format_name=format_name,
        split="all",
        include_images=False,
        provenance=False,
    )
    return services.export_job_run(job.pk)


def test_earlier_exports_stay_listed_with_their_download(page, live_server, boxed, tmp_path):
    dataset, organizer = boxed
    colleague = factories.user_with_roles("carl", ("organizers",))
    dataset.organizers.add(colleague)
    earlier = run_export(dataset, colleague, "voc")
    assert earlier.state == "done"

    sign_in(page, live_server.url, "olga", f"/organize/datasets/{dataset.pk}/benchmark/")
    page.wait_for_load_state("networkidle")
    row = page.locator(f"#exports tbody tr[data-job='{earlier.pk}']")
    expect(row).to_contain_text("voc")
    expect(row).to_contain_text("carl")
    expect(row.locator(".state")).to_contain_text("done")

    page.get_by_label("Format").select_option("coco")
    page.get_by_role("button", name="Start export").click()
    expect(page.locator("#export-status")).to_contain_text("done")
    newest = ExportJob.objects.exclude(pk=earlier.pk).get(dataset=dataset)
    rows = page.locator("#exports tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_have_attribute("data-job", str(newest.pk))
    expect(rows.first).to_contain_text("olga")
    expect(rows.first.locator(".state")).to_contain_text("done")

    # The earlier archive is still offered and downloads.
    with page.expect_download() as download_info:
        row.get_by_role("link", name=f"Download export {earlier.pk}").click()
    path = tmp_path / "earlier.zip"
    download_info.value.save_as(path)
    archive = zipfile.ZipFile(io.BytesIO(path.read_bytes()))
    assert json.loads(archive.read("manifest.json"))["format"] == "voc"
    assert page.console_errors == []


def test_a_coco_export_by_uploaded_names_downloads_with_those_names(page, live_server, boxed, tmp_path):
    coco = pytest.importorskip("pycocotools.coco")
    dataset, _ = boxed
    twin = dataset.images.order_by("id").last()
    twin.original_name = "dog-0.png"  # the same name as the first image
    twin.save(update_fields=["original_name"])

    sign_in(page, live_server.url, "olga", f"/organize/datasets/{dataset.pk}/benchmark/")
    page.wait_for_load_state("networkidle")
    page.get_by_label("Format").select_option("voc")
    page.get_by_label("Image file names").select_option("original")
    page.get_by_role("button", name="Start export").click()
    expect(page.locator("#export-error")).to_contain_text("coco only")

    page.get_by_label("Format").select_option("coco")
    page.get_by_label("Include image files").check()
    page.get_by_role("button", name="Start export").click()
    expect(page.locator("#export-status")).to_contain_text("1 images renamed")
    with page.expect_download() as download_info:
        page.locator("#export-download").click()
    path = tmp_path / "named.zip"
    download_info.value.save_as(path)
    archive = zipfile.ZipFile(path)
    (tmp_path / "all.json").write_bytes(archive.read("annotations/instances_all.json"))
    api = coco.COCO(str(tmp_path / "all.json"))
    names = sorted(im["file_name"] for im in api.loadImgs(api.getImgIds()))
    assert names == sorted(["dog-0.png", "dog-1.png", "dog-2.png", f"dog-0-{twin.pk}.png"])
    assert all(f"images/all/{name}" in archive.namelist() for name in names)
    manifest = json.loads(archive.read("manifest.json"))
    assert {row["original_name"] for row in manifest["images"]} == {"dog-0.png", "dog-1.png", "dog-2.png"}
    expect(page.locator("#exports tbody tr").first).to_contain_text("original file names")
    # The refused VOC request is the one failed load the browser reports.
    assert [e for e in page.console_errors if "status of 400" not in e] == []
