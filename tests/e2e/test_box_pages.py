"""The box pages in real headless Chromium: a box drawn by mouse on a scaled-down image is stored in
original-image pixels, and the next worker judges it on the quality page with the Y key."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, AssignmentState, Box, BoxState
from tests import factories
from tests.e2e.conftest import HEIGHT, WIDTH
from tests.e2e.test_worker_page import sign_in, wait_for_image_loaded

pytestmark = pytest.mark.browser


def to_screen(svg_box: dict, x: float, y: float) -> tuple[float, float]:
    return (svg_box["x"] + x * svg_box["width"] / WIDTH, svg_box["y"] + y * svg_box["height"] / HEIGHT)


def test_a_box_drawn_by_mouse_on_a_scaled_image_is_stored_in_original_pixels(
    page, live_server, draw_job, chromium, tmp_path
):
    page.set_viewport_size({"width": 700, "height": 900})
    factories.user_with_roles("ann", ("workers",))
    sign_in(page, live_server.url, "ann")
    expect(page.locator("h1.question")).to_have_text("Draw a box around one dog")
    expect(page.locator(".gloss")).to_contain_text("a domesticated canid")
    assert wait_for_image_loaded(page) == [WIDTH, HEIGHT]
    svg = page.locator("svg.overlay").bounding_box()
    assert 450 < svg["width"] < 700  # shown at about half size
    scale = WIDTH / svg["width"]

    # Drag from (300, 200) to (900, 600) in image pixels.
    page.mouse.move(*to_screen(svg, 300, 200))
    page.mouse.down()
    page.mouse.move(*to_screen(svg, 600, 400), steps=5)
    page.mouse.move(*to_screen(svg, 900, 600), steps=5)
    page.mouse.up()
    expect(page.locator("rect.box.draft")).to_be_visible()
    # Widen it by the east handle: 40 screen px to the right.
    handle = page.locator("rect.handle-e").bounding_box()
    page.mouse.move(handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2)
    page.mouse.down()
    page.mouse.move(handle["x"] + handle["width"] / 2 + 40, handle["y"] + handle["height"] / 2, steps=4)
    page.mouse.up()
    # Screenshots land in pytest's temporary directory, for a person to look at when a run goes wrong.
    page.screenshot(path=tmp_path / "draw-page.png", full_page=True)
    page.keyboard.press("Enter")
    expect(page.locator("#answered")).to_have_text("1")

    box = Box.objects.get()
    tolerance = 1.5 * scale  # a screen pixel or so, in image pixels
    assert box.x1 == pytest.approx(300, abs=tolerance) and box.y1 == pytest.approx(200, abs=tolerance)
    assert box.x2 == pytest.approx(900 + 40 * scale, abs=tolerance)
    assert box.y2 == pytest.approx(600, abs=tolerance)
    assert box.state == BoxState.PENDING and box.drawn_by.user.username == "ann"
    # The drawer is not offered the quality check of their own box.
    expect(page.locator("#status")).to_contain_text("No tasks are waiting")

    # A second worker sees the box on the quality page and accepts it with the Y key.
    factories.user_with_roles("bob", ("workers",))
    context = chromium.new_context(viewport={"width": 700, "height": 900})
    try:
        other = context.new_page()
        sign_in(other, live_server.url, "bob")
        expect(other.locator("h1.question")).to_contain_text("tight around one whole visible dog")
        expect(other.locator("rect.box.judged")).to_have_count(1)
        wait_for_image_loaded(other)
        other.screenshot(path=tmp_path / "quality-page.png", full_page=True)
        other.keyboard.press("y")
        expect(other.locator("#answered")).to_have_text("1")
    finally:
        context.close()
    vote = Assignment.objects.get(worker__user__username="bob", state=AssignmentState.SUBMITTED)
    # Quality is a consensus question (the default backend), drawn by kinds/question.js.
    assert vote.answer == {"answer": True} and vote.task.kind == "question"
    assert page.console_errors == []
