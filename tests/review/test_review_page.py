"""The reviewer page forgives mistakes (issue 17), in real Chromium: a mis-keyed decision is taken back with U,
skipped items come back instead of "the queue is empty", Enter in the reason field hands the keys back to the
decisions, and the queue table stays beside (or above) the question without covering it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Box, BoxState
from review import scan
from review.models import Decision, ItemState, ReviewDecision, ReviewItem
from tests import factories
from tests.conftest import png_bytes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "rita-pass-123"


@pytest.fixture
def duplicates(live_server, make_box):
    """Two duplicate pairs of dog boxes, on two images: two review items."""
    factories.user_with_roles("rita", ("reviewers",), password=PASSWORD)
    dataset = factories.DatasetFactory()
    dog = factories.ConceptFactory(name="dog")
    for seed in range(2):
        img = factories.ImageFactory(
            dataset=dataset, width=200, height=150, file__data=png_bytes((200, 150), seed=seed)
        )
        make_box(img, dog, 20, 20, 120, 120)
        make_box(img, dog, 24, 20, 120, 118)
    scan.overlaps_scan(dataset)
    return list(ReviewItem.objects.order_by("id"))


def open_review(page, base_url: str) -> None:
    page.goto(f"{base_url}/accounts/login/?next=/review/")
    page.fill("input[name=username]", "rita")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}/review/")


def shown(page):
    item = page.locator("#item:not([hidden])")
    item.wait_for()
    return int(item.get_attribute("data-item"))


def test_a_mis_keyed_decision_is_taken_back_and_decided_again(page, live_server, duplicates):
    open_review(page, live_server.url)
    first = shown(page)
    page.keyboard.press("2")  # meant 1
    expect(page.locator("#decided")).to_have_text("1")
    expect(page.locator("#item")).not_to_have_attribute("data-item", str(first))
    second = shown(page)
    expect(page.locator("#undo-bar")).to_contain_text(f"Item {first} decided: Duplicate: keep A, remove B")

    page.keyboard.press("u")
    expect(page.locator("#item")).to_have_attribute("data-item", str(first))
    expect(page.locator("#status")).to_contain_text(f"Decision on item {first} taken back")
    expect(page.locator("#decided")).to_have_text("0")
    item = ReviewItem.objects.get(pk=first)
    assert item.state == ItemState.LEASED and Box.objects.get(pk=item.box_b_id).state == BoxState.ACCEPTED

    page.keyboard.press("1")
    expect(page.locator("#item")).to_have_attribute("data-item", str(second))
    decisions = list(
        ReviewDecision.objects.filter(item_id=first).order_by("id").values_list("decision", flat=True)
    )
    assert decisions == [Decision.DUPLICATE_KEEP_A, Decision.UNDO, Decision.DISTINCT]
    assert page.console_errors == []


def test_a_skipped_item_comes_back_when_nothing_else_is_left(page, live_server, duplicates):
    open_review(page, live_server.url)
    first = shown(page)
    page.keyboard.press("s")
    expect(page.locator("#item")).not_to_have_attribute("data-item", str(first))
    second = shown(page)
    page.keyboard.press("s")
    expect(page.locator("#item")).to_have_attribute("data-item", str(first))
    expect(page.locator("#status")).not_to_contain_text("queue is empty")
    page.keyboard.press("1")
    expect(page.locator("#item")).to_have_attribute("data-item", str(second))


def test_enter_in_the_reason_field_hands_the_keys_back_to_the_decisions(page, live_server, duplicates):
    open_review(page, live_server.url)
    first = shown(page)
    page.locator("#reason").fill("same dog, 2 boxes")
    page.locator("#reason").press("Enter")
    expect(page.locator("#status")).to_contain_text("press the number of your decision")
    page.keyboard.press("3")
    expect(page.locator("#decided")).to_have_text("1")
    decision = ReviewDecision.objects.get(item_id=first)
    assert (decision.decision, decision.reason) == (Decision.DUPLICATE_KEEP_B, "same dog, 2 boxes")


@pytest.mark.parametrize("width", [1100, 800, 390])
def test_the_queue_table_never_covers_the_question(page, live_server, duplicates, width):
    page.set_viewport_size({"width": width, "height": 844})
    open_review(page, live_server.url)
    shown(page)
    page.wait_for_selector("#queue-counts td", state="attached")  # no eval: the page's CSP forbids it
    table = page.locator("#queue-counts").bounding_box()
    queue = page.locator("aside.queue").bounding_box()
    for selector in ("#item-title", "#stage", "#choices"):
        other = page.locator(selector).bounding_box()
        apart = (
            table["x"] + table["width"] <= other["x"] + 0.5
            or table["y"] + table["height"] <= other["y"] + 0.5
        )
        assert apart, f"the queue table overlaps {selector} at {width} px"
    assert table["x"] + table["width"] <= queue["x"] + queue["width"] + 0.5, (
        "the table spills out of its card"
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= width
