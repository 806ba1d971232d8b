"""Example images on the worker page (issue 17), in real Chromium: the examples of the task's concept and kind
beside the question, what counts apart from what does not, collapsible, and no axe-core violation with them."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.examples import example_add
from annotation.models import Assignment, AssignmentState
from tests import factories
from tests.conftest import png_bytes
from tests.e2e.test_accessibility import violations
from tests.e2e.test_worker_page import sign_in, wait_for_image_loaded

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def tasks_with_examples(two_vote_tasks):
    task = two_vote_tasks[0]
    for polarity, seed, caption in (("positive", 5, "a dog lying down"), ("negative", 6, "a fox, not a dog")):
        example_add(
            dataset=task.dataset,
            concept=task.concept,
            kind="binary_vote",
            polarity=polarity,
            data=png_bytes(size=(120, 90), seed=seed),
            name=f"example-{seed}",
            caption=caption,
        )
    return two_vote_tasks


@pytest.mark.parametrize("viewport", [(1100, 800), (390, 844)], ids=["desktop", "phone"])
def test_the_examples_show_beside_the_question_collapsible_and_without_violations(
    page, live_server, tasks_with_examples, viewport
):
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    factories.user_with_roles("ann", ("workers",))
    sign_in(page, live_server.url, "ann")
    wait_for_image_loaded(page)
    section = page.locator("details.examples-box")
    expect(section.locator("summary")).to_have_text("Examples: 1 that count, 1 that do not")
    if viewport[0] < 480:
        expect(section).not_to_have_attribute("open", "")  # on a phone the task comes first
        section.locator("summary").click()
    figures = section.locator("figure")
    expect(figures).to_have_count(2)
    expect(figures.nth(0)).to_have_text("Counts: a dog lying down")
    expect(figures.nth(1)).to_have_text("Does not count: a fox, not a dog")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.example img')].every(i => i.complete && i.naturalWidth > 0)"
    )
    assert page.get_by_role("img", name="a fox, not a dog").is_visible()
    # The examples come after the question and before the task's own image.
    order = page.evaluate(
        "() => [...document.querySelectorAll('#task-body h1, details.examples-box, img.task-image')]"
        ".map(e => e.tagName)"
    )
    assert order == ["H1", "DETAILS", "IMG"]
    assert violations(page) == []

    section.locator("summary").click()  # collapsed
    expect(figures.first).to_be_hidden()
    page.keyboard.press("y")
    expect(page.locator("#answered")).to_have_text("1")
    assert Assignment.objects.filter(state=AssignmentState.SUBMITTED).count() == 1
