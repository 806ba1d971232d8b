"""/mturk/task/ in real Chromium, inside an iframe of a page served from a test origin standing in for MTurk:
preview leases nothing; an accepted assignment is answered with the worker page's task modules and the form
is posted, inside the frame, to the test origin's externalSubmit with the assignment's fields; a forged
turkSubmitTo gets no form; another origin cannot frame the page at all."""

from __future__ import annotations

import html
import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from playwright.sync_api import expect

from annotation.ingest import IngestItem, images_ingest
from annotation.models import Assignment
from consensus.binary_vote import vote_tasks_create
from crowd.models import Bundle, BundleSize, HitState, MturkHit, MturkHitType
from tests import factories
from tests.conftest import png_bytes
from tests.crowd.providers.mturk_helpers import assignment, stubbed_client
from tests.e2e.test_worker_page import wait_for_image_decoded

pytestmark = pytest.mark.browser


class FramingSite:
    """A small HTTP server on the loopback address, standing in for MTurk's worker site: `/hit?src=URL` is a
    page framing URL, and whatever is posted to `/mturk/externalSubmit` is recorded (with the headers that
    show which document posted it)."""

    def __init__(self):
        self.posts: list[dict] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                src = parse_qs(urlsplit(self.path).query).get("src", [""])[0]
                body = f'<!doctype html><title>HIT</title><iframe id="task" src="{html.escape(src)}" width="900" height="700"></iframe>'
                self._send(body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                site.posts.append(
                    {
                        "path": self.path,
                        "fields": parse_qs(self.rfile.read(length).decode()),
                        "dest": self.headers.get("Sec-Fetch-Dest"),
                    }
                )
                self._send("<p id='thanks'>submitted</p>")

            def _send(self, body: str):
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def frame(self, page, url: str) -> None:
        page.goto(f"{self.origin}/hit?{urlencode({'src': url})}")


@pytest.fixture
def turk():
    site = FramingSite()
    yield site
    site.server.shutdown()


@pytest.fixture
def evil():
    site = FramingSite()
    yield site
    site.server.shutdown()


@pytest.fixture
def hit(live_server, settings, turk):
    settings.CROWDLABEL = {
        **settings.CROWDLABEL,
        "MTURK_FRAME_ANCESTORS": [turk.origin],
        "MTURK_SUBMIT_HOSTS": [turk.origin],
    }
    organizer = factories.user_with_roles("organizer", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer])
    images_ingest(
        dataset=dataset,
        items=[IngestItem(f"{n}.png", png_bytes(size=(320, 240), seed=n)) for n in range(3)],
    )
    concept = factories.ConceptFactory(wnid="n02084071", name="dog", gloss="a domesticated canid")
    vote_tasks_create(dataset=dataset, concept=concept, answers_wanted=1)
    BundleSize.objects.create(dataset=dataset, kind="binary_vote", size=2)
    hit_type = MturkHitType.objects.create(
        dataset=dataset,
        kind="binary_vote",
        title="Dogs?",
        description="Say whether each image shows a dog.",
        reward=Decimal("0.30"),
        hit_type_id="HT",
    )
    return MturkHit.objects.create(
        hit_type=hit_type,
        batch="b",
        request_token="t",
        hit_id="HIT1",
        max_assignments=1,
        estimated_cost=Decimal("0.36"),
        state=HitState.PUBLISHED,
    )


@pytest.fixture
def stubbed(monkeypatch):
    client, stubber = stubbed_client()
    monkeypatch.setattr("crowd.providers.mturk.client", lambda: client)
    with stubber:
        yield stubber


def task_url(live_server, turk: FramingSite, **params) -> str:
    base = {"hitId": "HIT1", "assignmentId": "ASSIGN1", "workerId": "WORKER1", "turkSubmitTo": turk.origin}
    return f"{live_server.url}/mturk/task/?{urlencode({**base, **params})}"


PREVIEW = {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "workerId": ""}


def test_preview_then_accepted_assignment_posts_the_form_to_mturk_inside_the_frame(
    page, live_server, hit, stubbed, turk
):
    turk.frame(page, task_url(live_server, turk, **PREVIEW))
    frame = page.frame_locator("#task")
    expect(frame.locator("#preview")).to_contain_text("Say whether each image shows a dog.")
    assert not Assignment.objects.exists()

    stubbed.add_response(
        "get_assignment", {"Assignment": assignment("ASSIGN1", "WORKER1")}, {"AssignmentId": "ASSIGN1"}
    )
    turk.frame(page, task_url(live_server, turk))
    task_frame = page.frame(url=lambda url: "/mturk/task/" in url)
    for n in range(2):
        expect(frame.locator("#progress")).to_have_text(f"{n} / 2")
        expect(frame.locator("h1.question")).to_have_text("Does this image show a dog?")
        assert wait_for_image_decoded(task_frame) == [320, 240]  # the provider page has no look delay
        frame.locator("button.answer.yes").click()
    expect(frame.locator("#thanks")).to_have_text("submitted")
    bundle = Bundle.objects.get()
    assert turk.posts == [
        {
            "path": "/mturk/externalSubmit",
            "fields": {"assignmentId": ["ASSIGN1"], "bundle": [str(bundle.pk)], "answered": ["2"]},
            "dest": "iframe",  # posted by the framed page into its own frame, as MTurk expects
        }
    ]
    assert page.console_errors == []


def test_a_forged_turk_submit_to_gets_no_session(page, live_server, hit, stubbed, turk, evil):
    turk.frame(page, task_url(live_server, turk, turkSubmitTo=evil.origin))
    expect(page.frame_locator("#task").locator("#session-error")).to_contain_text(
        "not a Mechanical Turk host"
    )
    assert not Bundle.objects.exists() and turk.posts == [] and evil.posts == []


def test_another_origin_cannot_frame_the_page(page, live_server, hit, stubbed, turk, evil):
    page.on("console", lambda msg: page.console_errors.append(msg.text))
    evil.frame(page, task_url(live_server, turk, **PREVIEW))
    page.wait_for_function("() => document.querySelector('#task') !== null")
    expect(page.frame_locator("#task").locator("body")).to_have_count(1)  # the frame has a document...
    assert page.frame_locator("#task").locator("#preview").count() == 0  # ... but not ours
    assert any("frame-ancestors" in text for text in page.console_errors)
