"""The worker page in real headless Chromium: sign in, see the image and question, answer by key and by click."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, AssignmentState, Task, TaskState
from tests import factories

pytestmark = pytest.mark.browser

PASSWORD = "pass-for-tests-123"


def sign_in(page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/accounts/login/?next=/worker/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base_url}/worker/")


def wait_for_image_decoded(page) -> list[int]:
    """The task's image has really arrived and decoded (a broken or refused image has naturalWidth 0)."""
    page.wait_for_function(
        "() => { const img = document.querySelector('img.task-image');"
        " return img !== null && img.complete && img.naturalWidth > 0; }"
    )
    return page.locator("img.task-image").evaluate("img => [img.naturalWidth, img.naturalHeight]")


def wait_for_image_loaded(page) -> list[int]:
    """The worker page's task image has decoded and the page takes answers (it ignores them until the image has
    been on screen a moment)."""
    size = wait_for_image_decoded(page)
    page.locator("#task-body[data-answerable]").wait_for()
    return size


def test_worker_answers_two_votes_by_key_and_by_click_and_both_are_stored_once(
    page, live_server, two_vote_tasks, tmp_path
):
    factories.user_with_roles("ann", ("workers",))
    sign_in(page, live_server.url, "ann")

    question = page.locator("h1.question")
    expect(question).to_have_text("Does this image show a dog?")
    expect(page.locator(".gloss")).to_contain_text("a domesticated canid")
    expect(page.locator("img.task-image")).to_be_visible()
    assert wait_for_image_loaded(page) == [320, 240]  # the first ingested image, decoded in the browser
    first_assignment = page.locator("#task-body").get_attribute("data-assignment")

    # Screenshots land in pytest's temporary directory, for a person to look at when a run goes wrong.
    shots = tmp_path / "screenshots"
    page.screenshot(path=shots / "first-task.png", full_page=True)

    # Browser shortcuts that share a letter (Ctrl+Y redo, Alt+N menus) must not answer the question.
    page.keyboard.press("Control+y")
    page.keyboard.press("Alt+n")
    page.wait_for_timeout(500)
    expect(page.locator("#answered")).to_have_text("0")
    assert not Assignment.objects.filter(state=AssignmentState.SUBMITTED).exists()

    page.keyboard.down("y")
    expect(page.locator("#answered")).to_have_text("1")
    expect(page.locator("#task-body")).not_to_have_attribute("data-assignment", first_assignment)
    expect(question).to_have_text("Does this image show a dog?")
    assert wait_for_image_loaded(page) == [240, 320]
    # The key is still held: its auto-repeat must not answer the second task as well.
    page.keyboard.down("y")
    page.wait_for_timeout(500)
    page.keyboard.up("y")
    expect(page.locator("#answered")).to_have_text("1")

    page.get_by_role("button", name="No").click()
    expect(page.locator("#answered")).to_have_text("2")
    expect(page.locator("#status")).to_contain_text("No tasks are waiting")
    expect(page.locator("img.task-image")).to_have_count(0)
    page.screenshot(path=shots / "no-more-tasks.png", full_page=True)
    assert page.console_errors == []

    submitted = list(Assignment.objects.filter(state=AssignmentState.SUBMITTED).order_by("submitted_at"))
    assert [a.answer for a in submitted] == [{"answer": True}, {"answer": False}]
    assert all(a.idempotency_key for a in submitted)
    assert len({a.idempotency_key for a in submitted}) == 2
    assert {a.worker.user.username for a in submitted} == {"ann"}
    assert {a.task_id for a in submitted} == {t.pk for t in two_vote_tasks}
    assert Assignment.objects.exclude(state=AssignmentState.SUBMITTED).count() == 0
    assert set(Task.objects.values_list("state", flat=True)) == {TaskState.DONE}
