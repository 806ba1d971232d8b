"""The draw page's tools (issue 17), in real Chromium: a box drawn by keyboard alone (the drawing area is a
labelled tab stop, arrows move the box, Tab goes through its handles), zoom by keys and wheel and pan with the
space bar, all keeping the stored box in original-image pixels; brightness and contrast filter the image only;
handles large enough for a finger on touch screens."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.models import Box
from tests import factories
from tests.e2e.conftest import HEIGHT, WIDTH
from tests.e2e.test_worker_forgiving import drag
from tests.e2e.test_worker_page import sign_in, wait_for_image_loaded

pytestmark = pytest.mark.browser


def draft(page) -> list[float]:
    rect = page.locator("rect.box.draft")
    x, y, w, h = (float(rect.get_attribute(k)) for k in ("x", "y", "width", "height"))
    return [x, y, x + w, y + h]


def image_scale(page) -> float:
    """Original-image pixels per screen pixel, at the current zoom."""
    return WIDTH / page.locator("svg.overlay").bounding_box()["width"]


def test_a_box_drawn_and_resized_by_keyboard_alone_is_stored_in_original_pixels(page, live_server, draw_job):
    factories.user_with_roles("ann", ("workers",))
    sign_in(page, live_server.url, "ann")
    wait_for_image_loaded(page)
    area = page.get_by_role("application", name=re.compile("Box one dog: arrow keys draw and move the box"))
    expect(area).to_have_attribute("tabindex", "0")
    for _ in range(30):  # Tab until the drawing area has the keyboard: it is on the tab order
        if area.evaluate("el => el === document.activeElement"):
            break
        page.keyboard.press("Tab")
    else:
        raise AssertionError("the drawing area is never reached by Tab")
    scale = image_scale(page)

    page.keyboard.press("ArrowRight")  # the first arrow draws a box in the middle, a third of the image
    assert draft(page) == pytest.approx([WIDTH / 3, HEIGHT / 3, 2 * WIDTH / 3, 2 * HEIGHT / 3], abs=0.01)
    page.keyboard.press("Shift+ArrowLeft")  # moves it 20 screen px
    for _ in range(5):
        page.keyboard.press("Tab")
    expect(page.locator(".draw-message")).to_have_text("Arrow keys now move the bottom right corner.")
    expect(page.locator("rect.handle-se")).to_have_class(re.compile(r"\bactive\b"))
    for _ in range(3):
        page.keyboard.press("ArrowDown")  # 2 screen px each
    expect(page.locator(".draw-message")).to_have_text(
        re.compile(r"^Box \d+ by \d+ pixels, from \d+, \d+ to")
    )
    expected = [WIDTH / 3 - 20 * scale, HEIGHT / 3, 2 * WIDTH / 3 - 20 * scale, 2 * HEIGHT / 3 + 6 * scale]
    assert draft(page) == pytest.approx(expected, abs=0.01)

    for _ in range(3):  # s, sw, w: then Tab leaves the drawing area
        page.keyboard.press("Tab")
    assert area.evaluate("el => el === document.activeElement")
    page.keyboard.press("Tab")
    assert not area.evaluate("el => el === document.activeElement")

    page.keyboard.press("Enter")
    expect(page.locator("#answered")).to_have_text("1")
    box = Box.objects.get()
    assert [box.x1, box.y1, box.x2, box.y2] == pytest.approx(expected, abs=0.1)
    assert page.console_errors == []


def test_zoom_by_keys_and_wheel_and_space_drag_pan_keep_a_drawn_box_in_original_pixels(
    page, live_server, draw_job
):
    factories.user_with_roles("ann", ("workers",))
    sign_in(page, live_server.url, "ann")
    wait_for_image_loaded(page)
    fitted = image_scale(page)
    for _ in range(3):
        page.keyboard.press("+")
    expect(page.locator(".zoom-level")).to_have_text("195%")
    viewport = page.locator(".viewport").bounding_box()
    page.mouse.move(viewport["x"] + viewport["width"] / 2, viewport["y"] + viewport["height"] / 2)
    page.mouse.wheel(0, -100)
    expect(page.locator(".zoom-level")).to_have_text("244%")
    assert image_scale(page) == pytest.approx(fitted / 2.44, rel=0.01)
    # The viewport keeps its size on the page: the zoomed image is clipped, not spilled over the page.
    assert page.locator(".viewport").bounding_box()["width"] == pytest.approx(viewport["width"], abs=1)

    # Space held: a drag pans instead of drawing.
    before = page.locator("svg.overlay").bounding_box()
    page.keyboard.down(" ")
    drag(page, (0.5, 0.5), (0.6, 0.55))
    page.keyboard.up(" ")
    after = page.locator("svg.overlay").bounding_box()
    assert after["x"] > before["x"] and after["y"] > before["y"]
    expect(page.locator("rect.box.draft")).to_be_hidden()

    # A box drawn inside the visible part of the zoomed image: where it is in original pixels.
    svg = after
    start = (viewport["x"] + 0.3 * viewport["width"], viewport["y"] + 0.3 * viewport["height"])
    end = (viewport["x"] + 0.7 * viewport["width"], viewport["y"] + 0.6 * viewport["height"])
    to_image = [
        (start[0] - svg["x"]) * WIDTH / svg["width"],
        (start[1] - svg["y"]) * HEIGHT / svg["height"],
        (end[0] - svg["x"]) * WIDTH / svg["width"],
        (end[1] - svg["y"]) * HEIGHT / svg["height"],
    ]
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(*end, steps=6)
    page.mouse.up()
    tolerance = 1.5 * image_scale(page)  # a screen pixel or so, in image pixels at this zoom
    page.keyboard.press("Enter")
    expect(page.locator("#answered")).to_have_text("1")
    box = Box.objects.get()
    assert [box.x1, box.y1, box.x2, box.y2] == pytest.approx(to_image, abs=tolerance)
    assert page.console_errors == []


def test_brightness_and_contrast_filter_the_image_and_not_the_boxes(page, live_server, draw_job):
    factories.user_with_roles("ann", ("workers",))
    sign_in(page, live_server.url, "ann")
    wait_for_image_loaded(page)
    page.get_by_label("Brightness").fill("160")
    page.get_by_label("Contrast").fill("140")
    expect(page.locator("img.task-image")).to_have_css("filter", "brightness(1.6) contrast(1.4)")
    expect(page.locator("svg.overlay")).to_have_css("filter", "none")
    drag(page, (0.2, 0.25), (0.6, 0.75))
    expect(page.locator("rect.box.draft")).to_have_css("filter", "none")


def test_handles_are_large_enough_for_a_finger_on_a_touch_screen(chromium, live_server, draw_job):
    factories.user_with_roles("ann", ("workers",))
    context = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        sign_in(page, live_server.url, "ann")
        wait_for_image_loaded(page)
        drag(page, (0.2, 0.25), (0.7, 0.75))
        handle = page.locator("rect.handle-se").bounding_box()
        assert handle["width"] >= 24 and handle["height"] >= 24  # WCAG 2.2's minimum target size
        assert page.evaluate("document.documentElement.scrollWidth") <= 390  # the tools wrap
    finally:
        context.close()
