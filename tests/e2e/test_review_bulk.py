"""The reviewer page's "decide many" panel in real Chromium: list the items like the one shown, select all in
view, take one decision; each row says what happened (one held by another reviewer meanwhile is left as it was)
and the item shown moves on."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from annotation.models import Box, BoxState
from review import ambiguous
from review.models import ItemState, ReviewDecision, ReviewItem
from tests import factories
from tests.browser_fixtures import sign_in
from tests.conftest import png_bytes

pytestmark = pytest.mark.browser


def ambiguous_items(dataset, concept, n: int, first_id: int, priority: int) -> list[ReviewItem]:
    items = []
    for k in range(n):
        image = factories.ImageFactory(
            dataset=dataset, width=120, height=90, file__data=png_bytes((120, 90), seed=k)
        )
        box = Box.objects.create(
            image=image, concept=concept, x1=5, y1=5, x2=60 + k, y2=60, state=BoxState.PENDING
        )
        items.append(
            ambiguous.ambiguous_enqueue(
                dataset=dataset,
                subject={"type": "test.bulk", "id": first_id + k},
                reason="over its round cap",
                box=box,
                priority=priority,
            )
        )
    return items


def test_a_reviewer_decides_all_identical_items_in_view_at_once(page, live_server):
    factories.user_with_roles("rita", ("reviewers",))
    rob = factories.user_with_roles("rob", ("reviewers",))
    dataset = factories.DatasetFactory()
    dog, cat = factories.ConceptFactory(name="dog"), factories.ConceptFactory(name="cat")
    dogs = ambiguous_items(dataset, dog, 6, 0, priority=5)
    cats = ambiguous_items(dataset, cat, 2, 100, priority=1)

    sign_in(page, live_server.url, "rita", "/review/")
    page.locator("#item:not([hidden])").wait_for()
    shown = int(page.locator("#item").get_attribute("data-item"))
    assert shown == dogs[0].pk
    page.get_by_text("Decide many items at once").click()
    page.get_by_label("Only items like the one shown").check()
    page.get_by_role("button", name="List items").click()
    rows = page.locator("#bulk-items tbody tr")
    expect(rows).to_have_count(6)  # the dog items; the cat items ask about another class
    assert {int(r.get_attribute("data-item")) for r in rows.all()} == {item.pk for item in dogs}

    # Meanwhile another reviewer takes one of them.
    taken = dogs[3]
    ReviewItem.objects.filter(pk=taken.pk).update(
        state=ItemState.LEASED, leased_to=rob, lease_expires_at=timezone.now() + timedelta(minutes=10)
    )
    page.get_by_label("Select all in view").check()
    page.get_by_label("Decision").select_option("accept")
    page.get_by_label("Reason (optional)", exact=False).last.fill("every one shows a dog")
    page.get_by_role("button", name="Decide 6 selected").click()
    expect(page.locator("#bulk-status")).to_contain_text("5 decided, 1 not decided")
    expect(page.locator(f"#bulk-items tr[data-item='{taken.pk}'] .result")).to_contain_text(
        "another reviewer"
    )
    expect(page.locator(f"#bulk-items tr[data-item='{dogs[0].pk}'] .result")).to_have_text("decided")

    decided = [item for item in dogs if item.pk != taken.pk]
    for item in decided:
        assert ReviewItem.objects.get(pk=item.pk).state == ItemState.DECIDED
        assert Box.objects.get(pk=item.box_a_id).state == BoxState.ACCEPTED
    assert Box.objects.get(pk=taken.box_a_id).state == BoxState.PENDING
    assert set(ReviewDecision.objects.values_list("reason", flat=True)) == {"every one shows a dog"}
    # The item shown was among them: the page moved on to the next one, and counts the five.
    expect(page.locator("#item")).not_to_have_attribute("data-item", str(shown))
    expect(page.locator("#decided")).to_have_text("5")
    assert int(page.locator("#item").get_attribute("data-item")) in {item.pk for item in cats}
    assert page.console_errors == []
