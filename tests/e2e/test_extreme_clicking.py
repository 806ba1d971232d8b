"""The draw page in extreme-clicking mode (Papadopoulos et al., ICCV 2017), in real Chromium: four points clicked
by mouse in any order (a wrong one taken back with Backspace), placed by keyboard alone (arrow keys move a
cursor, Enter places a point), and tapped on a touch screen, each give the box through them, stored in
original-image pixels with its four extreme points named top, bottom, left and right."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.models import Box
from tests import factories
from tests.e2e.conftest import HEIGHT, WIDTH
from tests.e2e.test_accessibility import violations
from tests.e2e.test_worker_page import sign_in, wait_for_image_loaded

pytestmark = pytest.mark.browser


def screen(page, x: float, y: float) -> tuple[float, float]:
    """Image pixels to a point on the screen."""
    svg = page.locator("svg.overlay").bounding_box()
    return (svg["x"] + x * svg["width"] / WIDTH, svg["y"] + y * svg["height"] / HEIGHT)


def image_scale(page) -> float:
    return WIDTH / page.locator("svg.overlay").bounding_box()["width"]


def stored() -> tuple[list[float], dict[str, list[float]]]:
    box = Box.objects.get()
    return [box.x1, box.y1, box.x2, box.y2], box.extreme_points.as_dict()


def test_four_points_clicked_by_mouse_in_any_order_give_the_box_through_them(page, live_server, extreme_job):
    page.set_viewport_size({"width": 1100, "height": 1400})  # the whole image on the screen, under the how-to
    factories.user_with_roles("ann", ("workers",))
    sign_in(page, live_server.url, "ann")
    wait_for_image_loaded(page)
    expect(page.locator("h1.question")).to_have_text("Click the four extreme points of one dog")
    expect(page.locator(".extreme-how-to")).to_contain_text("top-most, bottom-most, left-most and right-most")
    expect(page.locator(".extreme-how-to svg[role=img]")).to_be_visible()
    tolerance = 1.5 * image_scale(page)
    # Right, top, a slip inside the object (taken back with Backspace), then left and bottom.
    for x, y in [(900, 380), (520, 150), (600, 400)]:
        page.mouse.click(*screen(page, x, y))
    expect(page.locator(".point-count")).to_have_text("Points: 3 of 4")
    page.keyboard.press("Backspace")
    expect(page.locator(".point-count")).to_have_text("Points: 2 of 4")
    page.mouse.click(*screen(page, 250, 420))
    page.mouse.click(*screen(page, 610, 700))
    expect(page.locator("circle.extreme-point")).to_have_count(4)
    expect(page.locator(".draw-message")).to_have_text(re.compile(r"^Box \d+ by \d+ pixels"))
    expect(page.locator("circle.extreme-point[data-role=top]")).to_have_count(1)
    assert violations(page) == []  # WCAG 2.1 A and AA, as the drag page (tests/e2e/test_accessibility.py)
    page.keyboard.press("Enter")
    expect(page.locator("#answered")).to_have_text("1")

    box, points = stored()
    assert box == pytest.approx([250, 150, 900, 700], abs=tolerance)
    assert points["top"] == pytest.approx([520, 150], abs=tolerance)
    assert points["bottom"] == pytest.approx([610, 700], abs=tolerance)
    assert points["left"] == pytest.approx([250, 420], abs=tolerance)
    assert points["right"] == pytest.approx([900, 380], abs=tolerance)
    assert box == [points["left"][0], points["top"][1], points["right"][0], points["bottom"][1]]
    assert page.console_errors == []


def test_points_placed_by_keyboard_alone_are_stored_in_original_pixels(page, live_server, extreme_job):
    factories.user_with_roles("ann", ("workers",))
    sign_in(page, live_server.url, "ann")
    wait_for_image_loaded(page)
    area = page.get_by_role(
        "application", name=re.compile("Click the top, bottom, left and right-most points")
    )
    expect(area).to_have_attribute("tabindex", "0")
    for _ in range(30):  # Tab until the drawing area has the keyboard
        if area.evaluate("el => el === document.activeElement"):
            break
        page.keyboard.press("Tab")
    else:
        raise AssertionError("the drawing area is never reached by Tab")
    step = 20 * image_scale(page)  # Shift+arrow: 20 screen px

    def move(key: str, times: int) -> None:
        for _ in range(times):
            page.keyboard.press(f"Shift+{key}")

    page.keyboard.press("ArrowUp")  # the first arrow shows the cursor in the middle of the image
    expect(page.locator(".draw-message")).to_have_text(
        f"Cursor at {WIDTH // 2}, {HEIGHT // 2}; Enter places point 1 of 4."
    )
    expect(page.locator("path.cursor")).to_be_visible()
    move("ArrowUp", 5)
    page.keyboard.press("Enter")  # top
    move("ArrowDown", 10)
    page.keyboard.press("Enter")  # bottom
    move("ArrowUp", 5)
    move("ArrowLeft", 8)
    page.keyboard.press("Enter")  # left
    page.keyboard.press("Enter")  # a slip: the same point again is no right-most point
    expect(page.locator(".draw-message")).to_have_text(re.compile("not the top, bottom, left and right-most"))
    page.keyboard.press("Backspace")
    expect(page.locator(".point-count")).to_have_text("Points: 3 of 4")
    move("ArrowRight", 16)
    page.keyboard.press("Enter")  # right
    expect(page.locator(".point-count")).to_have_text("Points: 4 of 4")
    page.keyboard.press("Enter")  # four points: Enter submits
    expect(page.locator("#answered")).to_have_text("1")

    cx, cy = WIDTH / 2, HEIGHT / 2
    box, points = stored()
    assert box == pytest.approx([cx - 8 * step, cy - 5 * step, cx + 8 * step, cy + 5 * step], abs=0.1)
    assert points["top"] == pytest.approx([cx, cy - 5 * step], abs=0.1)
    assert points["bottom"] == pytest.approx([cx, cy + 5 * step], abs=0.1)
    assert points["left"] == pytest.approx([cx - 8 * step, cy], abs=0.1)
    assert points["right"] == pytest.approx([cx + 8 * step, cy], abs=0.1)
    assert page.console_errors == []


def test_four_points_tapped_on_a_touch_screen_give_the_box_and_a_point_can_be_slid(
    chromium, live_server, extreme_job
):
    factories.user_with_roles("ann", ("workers",))
    context = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        context.set_default_timeout(15_000)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        sign_in(page, live_server.url, "ann")
        wait_for_image_loaded(page)
        page.locator("svg.overlay").scroll_into_view_if_needed()
        tolerance = 1.5 * image_scale(page)
        for x, y in [(300, 120), (280, 640), (100, 400), (900, 300)]:
            page.touchscreen.tap(*screen(page, x, y))
        expect(page.locator(".point-count")).to_have_text("Points: 4 of 4")
        marker = page.locator("circle.extreme-point[data-role=right]").bounding_box()
        assert marker["width"] >= 24  # a finger can take a point again (WCAG 2.2's minimum target size)
        # Slide the right-most point further right with a finger: touch pointer events, as a phone sends them.
        touch = context.new_cdp_session(page)
        start, end = screen(page, 900, 300), screen(page, 1000, 300)
        for kind, (x, y) in [
            ("touchStart", start),
            ("touchMove", (start[0] + 10, start[1])),
            ("touchMove", end),
        ]:
            touch.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": [{"x": x, "y": y}]})
        touch.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
        expect(page.locator(".point-count")).to_have_text("Points: 4 of 4")
        # The slide has been drawn (the box reaches the new right-most point) before the worker taps Submit.
        expect(page.locator(".draw-message")).to_have_text(
            re.compile(r"to (99\d|100\d), 64\d\. Tap Submit box")
        )
        # A tap right after a touch ends, near enough, is one double tap to Chromium's gesture detector (no
        # click); a person's taps are further apart than its double-tap window (300 ms).
        page.wait_for_timeout(400)
        page.get_by_role("button", name=re.compile("Submit box")).tap()
        expect(page.locator("#answered")).to_have_text("1", timeout=15_000)
        box, points = stored()
        assert box == pytest.approx([100, 120, 1000, 640], abs=tolerance)
        assert points["right"] == pytest.approx([1000, 300], abs=tolerance)
        assert points["left"] == pytest.approx([100, 400], abs=tolerance)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert errors == []
    finally:
        context.close()
