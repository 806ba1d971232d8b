"""Taking back the last answer on the worker page (issue 17), in real Chromium: the Undo button, U and Ctrl+Z
bring the answered task back on screen for a new answer, the task that was showing comes next, and the answer
taken back no longer counts; once the window has passed the offer is gone."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation import queue
from annotation.models import Assignment, AssignmentState, Task
from consensus.binary_vote import vote_tasks_create
from tests import factories
from tests.e2e.test_accessibility import violations
from tests.e2e.test_worker_forgiving import dataset_with_images
from tests.e2e.test_worker_page import sign_in, wait_for_image_loaded
from tests.waiting import when_idle

pytestmark = pytest.mark.browser


@pytest.fixture
def open_votes(live_server, settings):
    """Three vote tasks wanting 3 answers each: one answer never decides them. The window to take an answer
    back is a minute, not the default 10 s, so that a loaded machine still undoes inside it (the accessibility
    check alone may take seconds there); the test of the window's end sets its own."""
    settings.CROWDLABEL = {**settings.CROWDLABEL, "ANSWER_UNDO_SECONDS": 60}
    dataset, _ = dataset_with_images(3)
    concept = factories.ConceptFactory(wnid="n02084071", name="dog", gloss="a domesticated canid")
    return vote_tasks_create(dataset=dataset, concept=concept, answers_wanted=3)


def shown(page) -> str:
    return page.locator("#task-body").get_attribute("data-assignment")


@pytest.mark.parametrize("how", ["button", "U", "Control+z"])
def test_the_last_answer_is_taken_back_and_its_task_answered_again(page, live_server, open_votes, how):
    factories.user_with_roles("ann", ("workers",))
    sign_in(page, live_server.url, "ann")
    wait_for_image_loaded(page)
    first = shown(page)
    page.keyboard.press("y")
    expect(page.locator("#answered")).to_have_text("1")
    expect(page.locator("#task-body")).not_to_have_attribute("data-assignment", first)
    wait_for_image_loaded(page)
    second = shown(page)
    bar = page.locator("#undo-bar")
    expect(bar).to_be_visible()
    expect(bar).to_contain_text("You answered Yes to “Does this image show a dog?”")
    assert violations(page) == []  # the undo control too

    if how == "button":
        page.get_by_role("button", name="Undo").click()
    else:
        page.keyboard.press(how)
    expect(bar).to_contain_text("taken back")
    expect(page.locator("#answered")).to_have_text("0")
    wait_for_image_loaded(page)
    again = shown(page)
    assert again not in (first, second)  # a new lease on the first task
    page.keyboard.press("n")
    expect(page.locator("#answered")).to_have_text("1")
    # The task that was on screen comes back next, not a third one.
    expect(page.locator("#task-body")).to_have_attribute("data-assignment", second)
    wait_for_image_loaded(page)

    def read():
        withdrawn = Assignment.objects.get(pk=int(first))
        redo = Assignment.objects.get(pk=int(again))
        return withdrawn, redo, Task.objects.get(pk=withdrawn.task_id)

    withdrawn, redo, task = when_idle(read)
    assert withdrawn.state == AssignmentState.WITHDRAWN and withdrawn.answer == {"answer": True}
    assert redo.task_id == withdrawn.task_id and redo.answer == {"answer": False}
    assert task.answers_count == 1 and task.result == {"yes": 0, "no": 1}


def test_the_undo_offer_ends_with_its_window(page, live_server, open_votes, settings):
    # A window several times Playwright's slowest poll (1 s), so that the offer is seen while it lasts even on a
    # loaded machine; its end is waited for with the default timeout, not a budget a slow page can miss.
    settings.CROWDLABEL = {**settings.CROWDLABEL, "ANSWER_UNDO_SECONDS": 3}
    factories.user_with_roles("ann", ("workers",))
    sign_in(page, live_server.url, "ann")
    wait_for_image_loaded(page)
    first = shown(page)
    undo_requests = []
    page.on("request", lambda request: "/undo" in request.url and undo_requests.append(request.url))
    page.keyboard.press("y")
    expect(page.locator("#undo-bar")).to_be_visible()
    expect(page.locator("#undo-bar")).to_be_hidden()
    page.keyboard.press("u")
    # Not slept on: the next answer, given after U, is counted once everything U set going has run, and U
    # neither took the first answer back nor asked the server to.
    wait_for_image_loaded(page)
    page.keyboard.press("n")
    expect(page.locator("#answered")).to_have_text("2")
    assert undo_requests == []
    assert when_idle(lambda: Assignment.objects.get(pk=int(first)).state) == AssignmentState.SUBMITTED


def test_a_refused_undo_says_why_and_the_answer_stands(page, live_server, open_votes):
    factories.user_with_roles("ann", ("workers",))
    sign_in(page, live_server.url, "ann")
    wait_for_image_loaded(page)
    first = shown(page)
    page.keyboard.press("y")
    expect(page.locator("#answered")).to_have_text("1")
    wait_for_image_loaded(page)
    # Another worker takes the first task meanwhile: the undo is refused and the page says so.
    other = factories.user_with_roles("bob", ("workers",)).worker
    held = queue.task_lease_next(worker=other, dataset_id=Task.objects.get(assignments__pk=first).dataset_id)
    assert held is not None and held.task_id == Assignment.objects.get(pk=int(first)).task_id
    page.keyboard.press("u")
    expect(page.locator("#undo-bar")).to_contain_text("Your answer stands: another worker is answering")
    assert when_idle(lambda: Assignment.objects.get(pk=int(first)).state) == AssignmentState.SUBMITTED


def test_an_undo_lost_on_the_network_is_offered_again_and_done_once(page, live_server, open_votes):
    factories.user_with_roles("ann", ("workers",))
    sign_in(page, live_server.url, "ann")
    wait_for_image_loaded(page)
    first = shown(page)
    page.keyboard.press("y")
    expect(page.locator("#answered")).to_have_text("1")
    wait_for_image_loaded(page)
    dropped = []

    def drop_once(route):
        if dropped:
            return route.continue_()
        dropped.append(route.request.url)
        route.abort()

    page.route("**/undo", drop_once)
    page.keyboard.press("u")
    expect(page.locator("#undo-bar")).to_contain_text("Could not take your answer back")
    page.keyboard.press("u")
    expect(page.locator("#undo-bar")).to_contain_text("taken back")
    expect(page.locator("#answered")).to_have_text("0")
    assert len(dropped) == 1
    assert when_idle(lambda: Assignment.objects.get(pk=int(first)).state) == AssignmentState.WITHDRAWN
    leases = Assignment.objects.filter(task__assignments__pk=int(first), state=AssignmentState.LEASED)
    assert when_idle(leases.filter(worker__user__username="ann").count) == 1
