"""The worker page as fast as the worker feels it (issue 17), in real Chromium: the next task is leased and its
image loaded while the current one is shown, so an answer brings it from memory; one task is held ahead, never
more, and a reload gives it back; answers go to the server in the background and survive a network outage,
stored once each. The latency figures come from bench/worker_latency.py, not from a timed test."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from annotation.imagerefs import image_ref
from annotation.models import Assignment, AssignmentState
from consensus.binary_vote import vote_tasks_create
from tests import factories
from tests.e2e.test_worker_forgiving import dataset_with_images
from tests.e2e.test_worker_page import sign_in, wait_for_image_loaded
from tests.waiting import wait_until, when_idle

pytestmark = pytest.mark.browser


@pytest.fixture
def vote_tasks(live_server):
    dataset, _ = dataset_with_images(4)
    concept = factories.ConceptFactory(wnid="n02084071", name="dog", gloss="a domesticated canid")
    return vote_tasks_create(dataset=dataset, concept=concept, answers_wanted=1)


def held_by(username: str) -> list[Assignment]:
    return list(
        Assignment.objects.filter(worker__user__username=username, state=AssignmentState.LEASED).order_by(
            "id"
        )
    )


class Network:
    """What the page leased and loaded, seen from the browser: the tests read the database only while the page
    is idle (on SQLite a read in the test holds off the live server's writes)."""

    def __init__(self, page):
        self.leases: list[dict] = []
        self.loaded: list[str] = []
        self.requested: list[str] = []
        page.on("response", self._response)
        page.on("requestfinished", lambda request: self.loaded.append(request.url))
        page.on("request", lambda request: self.requested.append(request.url))

    def _response(self, response):
        if "/api/v1/tasks/next" in response.url and response.status == 200:
            body = response.json()
            if body:
                self.leases.append(body)
        elif "/submit" in response.url and response.status in (200, 201):
            handed = response.json().get("next")  # the lease an answer brought back (submit?next=true)
            if handed:
                self.leases.append(handed)

    def asked(self, fragment: str) -> list[str]:
        return [url for url in self.requested if fragment in url]

    def wait_until_ahead_is_loaded(self, page, shown: int) -> int:
        """The task leased after the one on screen, once its image's bytes have arrived; its assignment id."""

        def ahead() -> int | None:
            if self.leases and self.leases[-1]["id"] != shown:
                url = self.leases[-1]["task"]["image"]["url"]
                if any(loaded.endswith(url) for loaded in self.loaded):
                    return self.leases[-1]["id"]
            return None

        found = wait_until(
            ahead,
            f"a task leased and loaded ahead of {shown}",
            interval=0.05,
            sleep=lambda seconds: page.wait_for_timeout(seconds * 1000),  # the page's events keep arriving
            detail=lambda: str(self.leases),
        )
        page.wait_for_timeout(200)  # the page has nothing more to do until the next answer
        return found


def shown(page) -> int:
    return int(page.locator("#task-body").get_attribute("data-shown"))


def signed_in_with_one_ahead(page, live_server) -> tuple[Network, int, int]:
    """Ann signed in on the worker page: what the page did, the task on screen and the one leased ahead of it
    (its image loaded)."""
    network = Network(page)
    factories.user_with_roles("ann", ("workers",))
    sign_in(page, live_server.url, "ann")
    wait_for_image_loaded(page)
    first = shown(page)
    return network, first, network.wait_until_ahead_is_loaded(page, first)


def image_path(assignment_id: int) -> str:
    return f"/api/v1/task-images/{image_ref(Assignment.objects.get(pk=assignment_id).task.image_id)}"


def test_the_next_task_and_its_image_are_ready_before_the_answer_and_show_without_a_request(
    page, live_server, vote_tasks
):
    network, first, ahead = signed_in_with_one_ahead(page, live_server)
    assert [a.pk for a in held_by("ann")] == [first, ahead]
    ahead_image = image_path(ahead)

    before = len(network.requested)
    page.keyboard.press("y")
    expect(page.locator("#task-body")).to_have_attribute("data-shown", str(ahead))
    expect(page.locator("#answered")).to_have_text("1")
    assert not [url for url in network.requested[before:] if ahead_image in url], "the image came from memory"
    wait_for_image_loaded(page)
    # Again one ahead of the one on screen, never more.
    third = network.wait_until_ahead_is_loaded(page, ahead)
    assert [a.pk for a in held_by("ann")] == [ahead, third]
    assert Assignment.objects.get(pk=first).state == AssignmentState.SUBMITTED


def test_each_answer_brings_back_the_lease_after_next_so_tasks_next_is_asked_only_at_the_start(
    page, live_server, vote_tasks
):
    network, first, ahead = signed_in_with_one_ahead(page, live_server)
    assert len(network.asked("/api/v1/tasks/next")) == 2  # nothing answered yet: both from tasks/next

    page.keyboard.press("y")
    expect(page.locator("#task-body")).to_have_attribute("data-shown", str(ahead))
    wait_for_image_loaded(page)
    third = network.wait_until_ahead_is_loaded(page, ahead)
    page.keyboard.press("n")
    expect(page.locator("#task-body")).to_have_attribute("data-shown", str(third))
    wait_for_image_loaded(page)
    fourth = network.wait_until_ahead_is_loaded(page, third)

    submits = network.asked("/submit")
    assert len(submits) == 2 and all("next=true" in url for url in submits), submits
    assert len(network.asked("/api/v1/tasks/next")) == 2, "the leases came back with the answers"
    # Still one task ahead of the one on screen, never more; the answers stored once each.
    assert [a.pk for a in held_by("ann")] == [third, fourth]
    submitted = Assignment.objects.filter(state=AssignmentState.SUBMITTED).order_by("pk")
    assert [(a.pk, a.answer) for a in submitted] == [(first, {"answer": True}), (ahead, {"answer": False})]


def test_a_reload_gives_back_the_task_on_screen_and_the_one_leased_ahead(page, live_server, vote_tasks):
    network, first, ahead = signed_in_with_one_ahead(page, live_server)

    page.reload()
    wait_for_image_loaded(page)
    assert shown(page) == first
    page.keyboard.press("n")
    expect(page.locator("#task-body")).to_have_attribute("data-shown", str(ahead))
    expect(page.locator("#answered")).to_have_text("1")
    wait_for_image_loaded(page)
    third = network.wait_until_ahead_is_loaded(page, ahead)
    # Nothing was leased twice, and no third task while two were held.
    mine = Assignment.objects.filter(worker__user__username="ann")
    assert sorted(mine.values_list("pk", flat=True)) == [first, ahead, third]
    assert [a.pk for a in held_by("ann")] == [ahead, third]


def test_a_network_outage_of_ten_seconds_loses_no_answer_and_stores_none_twice(page, live_server, vote_tasks):
    network, first, ahead = signed_in_with_one_ahead(page, live_server)

    page.route("**/api/v1/**", lambda route: route.abort("internetdisconnected"))
    blocked_at = time.monotonic()
    page.keyboard.press("y")
    # The next task shows from memory while the answer cannot be sent; the page says it keeps the answer.
    expect(page.locator("#task-body")).to_have_attribute("data-shown", str(ahead))
    unsaved = page.locator("#unsaved")
    expect(unsaved).to_contain_text("Your last answer is not saved yet")
    wait_for_image_loaded(page)
    page.keyboard.press("n")
    expect(unsaved).to_contain_text("2 answers are not saved yet")
    expect(page.locator("#status")).to_contain_text("Could not load a task")
    assert not Assignment.objects.filter(state=AssignmentState.SUBMITTED).exists()
    page.wait_for_timeout(max(0.0, 10.0 - (time.monotonic() - blocked_at)) * 1000)
    page.unroute("**/api/v1/**")

    # Back online: both kept answers are stored (in order), the page goes on with new tasks.
    expect(page.locator("#answered")).to_have_text("2", timeout=60_000)
    expect(unsaved).to_be_hidden()
    wait_for_image_loaded(page)
    third = shown(page)
    network.wait_until_ahead_is_loaded(page, third)
    page.keyboard.press("y")
    expect(page.locator("#answered")).to_have_text("3")
    wait_for_image_loaded(page)
    page.wait_for_timeout(300)  # the last task's lease ahead finds nothing: the page is idle
    submitted = when_idle(
        lambda: list(Assignment.objects.filter(state=AssignmentState.SUBMITTED).order_by("submitted_at"))
    )
    assert [(a.pk, a.answer) for a in submitted] == [
        (first, {"answer": True}),
        (ahead, {"answer": False}),
        (third, {"answer": True}),
    ]
    # Stored once each: one assignment per task for this worker, each with its own Idempotency-Key.
    assert len({a.task_id for a in submitted}) == 3
    assert len({a.idempotency_key for a in submitted}) == 3
    # The browser logs each blocked request; nothing else went wrong on the page.
    assert [e for e in page.console_errors if "ERR_INTERNET_DISCONNECTED" not in e] == []


def test_an_answer_slower_than_the_page_waits_keeps_the_lease_it_brings_and_shows_it_next(
    page, live_server, vote_tasks
):
    """Given back, the lease would be lost to this worker for good (the queue never offers a worker a task they
    had): a lone worker would never answer that task. So it is kept, shown next, and every task is answered."""
    network, first, ahead = signed_in_with_one_ahead(page, live_server)

    def own_leases() -> list[int]:
        return [lease["id"] for lease in network.leases if lease["id"] not in (first, ahead)]

    def page_waits(seconds: float) -> None:
        page.wait_for_timeout(seconds * 1000)  # the page's events keep arriving meanwhile

    held: list = []
    page.route("**/submit?next=true*", lambda route: held.append(route))
    page.keyboard.press("y")
    expect(page.locator("#task-body")).to_have_attribute("data-shown", str(ahead))
    # The answer is held back until the page, tired of waiting for it (1 s), has leased ahead itself: slower
    # than the page waits by construction, not by a sleep a loaded machine may not outlast.
    wait_until(lambda: held, "the answer to be sent", sleep=page_waits)
    wait_until(
        own_leases,
        "the page to lease ahead itself while the answer is on its way",
        sleep=page_waits,
    )
    held[0].continue_()
    page.unroute("**/submit?next=true*")  # the later answers go straight through
    expect(page.locator("#answered")).to_have_text("1", timeout=60_000)
    wait_until(lambda: len(own_leases()) == 2, "the answer to bring a lease back", sleep=page_waits)
    assert len(network.asked("/api/v1/tasks/next")) == 3
    third, brought = own_leases()
    assert [a.pk for a in when_idle(lambda: held_by("ann"))] == [ahead, third, brought]
    assert Assignment.objects.get(pk=first).state == AssignmentState.SUBMITTED
    # The lease brought back is shown next, then the one the page leased itself.
    page.keyboard.press("n")
    expect(page.locator("#task-body")).to_have_attribute("data-shown", str(brought))
    expect(page.locator("#task-body[data-answerable]")).to_have_count(1)
    page.keyboard.press("y")
    expect(page.locator("#task-body")).to_have_attribute("data-shown", str(third))
    expect(page.locator("#answered")).to_have_text("3", timeout=60_000)
    submitted = when_idle(
        lambda: set(Assignment.objects.filter(state=AssignmentState.SUBMITTED).values_list("pk", flat=True))
    )
    assert {first, ahead, brought} <= submitted
    assert not Assignment.objects.filter(state=AssignmentState.RELEASED).exists()
