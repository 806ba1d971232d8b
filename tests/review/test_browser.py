"""A reviewer resolves a duplicate pair in real Chromium, with the keyboard only."""

from __future__ import annotations

import pytest

from annotation.models import Box, BoxState
from review import scan
from review.models import Decision, ItemState, ReviewDecision, ReviewItem
from tests import factories
from tests.conftest import png_bytes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_reviewer_resolves_a_duplicate_pair_with_the_keyboard(live_server, chromium, make_box):
    factories.user_with_roles("rita", ("reviewers",), password="rita-pass-123")
    dataset = factories.DatasetFactory()
    img = factories.ImageFactory(dataset=dataset, width=200, height=150, file__data=png_bytes((200, 150)))
    dog = factories.ConceptFactory(name="dog")
    a = make_box(img, dog, 20, 20, 120, 120)
    b = make_box(img, dog, 24, 20, 120, 118)
    scan.overlaps_scan(dataset)
    item = ReviewItem.objects.get()

    page = chromium.new_page()
    try:
        page.goto(f"{live_server.url}/accounts/login/?next=/review/")
        page.fill("input[name=username]", "rita")
        page.fill("input[name=password]", "rita-pass-123")
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/review/")

        page.wait_for_selector(f"#item[data-item='{item.pk}']:not([hidden])")
        assert page.inner_text(".box.a .box-label") == "A · dog"
        assert page.inner_text(".box.b .box-label") == "B · dog"
        assert page.locator("[data-decision='duplicate_keep_a'] kbd").inner_text() == "2"
        left = page.eval_on_selector(".box.a", "el => el.style.left")
        assert left == "10%", "boxes are placed in proportion to the original pixels"
        page.wait_for_function("() => document.querySelector('#queue-counts td') !== null")

        page.keyboard.press("2")  # duplicate: keep A, remove B

        page.wait_for_function("() => document.getElementById('decided').textContent === '1'")
        page.wait_for_function(
            "() => document.getElementById('status').textContent.includes('queue is empty')"
        )
    finally:
        page.close()

    decision = ReviewDecision.objects.get()
    assert (decision.item_id, decision.decision, decision.reviewer.username) == (
        item.pk,
        Decision.DUPLICATE_KEEP_A,
        "rita",
    )
    assert Box.objects.get(pk=a.pk).state == BoxState.ACCEPTED
    assert Box.objects.get(pk=b.pk).state == BoxState.REMOVED
    assert ReviewItem.objects.get().state == ItemState.DECIDED
