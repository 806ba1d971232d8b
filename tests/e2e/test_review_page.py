"""The reviewer page's queue overview in real Chromium: at a laptop's 1280 px its one-word column headers stay
whole (they used to break mid-word), and the counts follow an undo (they used to keep saying "decided")."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Box, BoxState
from review import scan
from tests import factories
from tests.conftest import png_bytes
from tests.e2e.test_worker_page import PASSWORD

pytestmark = pytest.mark.browser


def duplicate_pair_in_review():
    dataset = factories.DatasetFactory()
    img = factories.ImageFactory(dataset=dataset, width=200, height=150, file__data=png_bytes((200, 150)))
    dog = factories.ConceptFactory(name="dog")
    for x1, y2 in ((20, 120), (24, 118)):
        Box.objects.create(image=img, concept=dog, x1=x1, y1=20, x2=120, y2=y2, state=BoxState.ACCEPTED)
    scan.overlaps_scan(dataset)


def counts(page) -> list[str]:
    return page.locator("#queue-counts tbody tr[data-kind='duplicate'] td").all_inner_texts()


def wait_for_counts(page, *want: str) -> None:
    """Wait until the duplicate row reads `want` (open, in review, decided) all at once. The page asks for the
    counts on load, beside its first lease, and again once the item is leased: read once, right after the item
    showed, the row could still be the first answer's (a fresh-clone run read 1 open, 0 in review)."""
    page.wait_for_function(
        "want => [...document.querySelectorAll(\"#queue-counts tbody tr[data-kind='duplicate'] td\")]"
        ".slice(1).map(td => td.innerText).join(',') === want",
        arg=",".join(want),
    )


def test_queue_headers_stay_whole_and_counts_follow_an_undo(page, live_server):
    factories.user_with_roles("rita", ("reviewers",), password=PASSWORD)
    duplicate_pair_in_review()
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/accounts/login/?next=/review/")
    page.get_by_label("Username").fill("rita")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.locator("#item:not([hidden])").wait_for()
    page.wait_for_selector("#queue-counts td", state="attached")

    # One line box per one-word header: a header broken mid-word has two.
    lines = page.locator("#queue-counts th").evaluate_all(
        "ths => ths.map(th => { const r = document.createRange(); r.selectNodeContents(th);"
        " return [th.textContent, r.getClientRects().length]; })"
    )
    one_word = {text: n for text, n in lines if " " not in text}
    assert one_word and all(n == 1 for n in one_word.values()), lines

    wait_for_counts(page, "0", "1", "0")  # open, in review (leased to rita), decided
    page.keyboard.press("1")
    page.locator("#undo-bar:not([hidden])").wait_for()
    expect(page.locator("#queue-counts tbody tr[data-kind='duplicate'] td").nth(3)).to_have_text("1")
    page.keyboard.press("u")
    expect(page.locator("#status")).to_contain_text("taken back")
    wait_for_counts(page, "0", "1", "0")
    assert counts(page)[1:] == ["0", "1", "0"]
