"""The worker page in real headless Chromium with the media on S3 (moto's server on loopback): the task image
is redirected to the bucket, loads under the page's CSP and decodes; a CSP without the bucket's origin blocks
it, which is why the settings derive that origin from the storage's own configuration."""

from __future__ import annotations

import pytest

from annotation.ingest import IngestItem, images_ingest
from config.csp import media_origins
from consensus.binary_vote import vote_tasks_create
from tests import factories
from tests.conftest import png_bytes
from tests.e2e.test_worker_page import sign_in, wait_for_image_loaded
from tests.s3_fixtures import REGION
from tests.waiting import wait_until

pytestmark = pytest.mark.browser


@pytest.fixture
def task_on_s3(live_server, s3_media):
    dataset = factories.DatasetFactory()
    report = images_ingest(dataset=dataset, items=[IngestItem("s3.png", png_bytes(size=(320, 240), seed=9))])
    assert len(report.stored) == 1 and report.stored[0].file.storage.__class__.__name__ == "S3Storage"
    concept = factories.ConceptFactory(wnid="n02084071", name="dog", gloss="a domesticated canid")
    vote_tasks_create(dataset=dataset, concept=concept, answers_wanted=1)
    factories.user_with_roles("ann", ("workers",))


def bucket_responses(page, endpoint: str) -> list[int]:
    statuses: list[int] = []
    page.on("response", lambda r: r.url.startswith(endpoint) and statuses.append(r.status))
    return statuses


def test_the_task_image_comes_from_the_bucket_and_shows_under_the_csp(
    page, live_server, task_on_s3, s3_media, s3_endpoint, settings
):
    settings.CROWDLABEL = {
        **settings.CROWDLABEL,
        "CSP_IMG_SOURCES": media_origins(s3_media, REGION, s3_endpoint),
    }
    fetched = bucket_responses(page, s3_endpoint)

    sign_in(page, live_server.url, "ann")

    assert wait_for_image_loaded(page) == [320, 240]
    assert fetched == [200], "the image bytes came from the bucket, through its signed URL"
    assert not [e for e in page.console_errors if "Content Security Policy" in e]


def test_a_csp_without_the_buckets_origin_blocks_the_task_image(
    page, live_server, task_on_s3, s3_endpoint, settings
):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "CSP_IMG_SOURCES": []}
    fetched = bucket_responses(page, s3_endpoint)

    sign_in(page, live_server.url, "ann")

    # The task is shown, and its image ends up broken: loading finished with nothing decoded.
    page.wait_for_function(
        "() => { const img = document.querySelector('img.task-image');"
        " return img !== null && img.complete && img.naturalWidth === 0; }"
    )
    # The console message may arrive a while after the load failed (long on a loaded machine): waited for.
    wait_until(
        lambda: any("Content Security Policy" in e for e in page.console_errors),
        "the browser to report the Content Security Policy's refusal",
        sleep=lambda seconds: page.wait_for_timeout(seconds * 1000),
        detail=lambda: str(page.console_errors),
    )
    assert fetched == [], "the browser never asked the bucket"
