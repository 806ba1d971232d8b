"""A stall shown and resolved from the organizer's dataset page, in real Chromium: a question no worker of the
dataset can take any more is named under "Why work stopped", its stage says "stalled" instead of an ETA, and
"Settle these questions now" settles it (here: to review, the votes being split)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from consensus.models import Question, QuestionState
from tests.browser_fixtures import sign_in
from tests.consensus.conftest import concept  # noqa: F401 (a fixture)
from tests.consensus.test_starved import split_question  # noqa: F401 (a fixture)

pytestmark = pytest.mark.browser


def test_a_starved_question_is_explained_and_settled_from_the_page(
    page,
    live_server,
    organizer,
    dataset,
    split_question,  # noqa: F811
):
    organizer.set_password("pass-for-tests-123")
    organizer.save()
    sign_in(page, live_server.url, organizer.username, f"/organize/datasets/{dataset.pk}/")
    card = page.locator("#stalls")
    expect(card).to_be_visible()
    expect(card.locator("li[data-stall='starved_questions']")).to_contain_text(
        "1 open question (image_verify) need a voter who has not answered yet"
    )
    expect(page.locator("[data-stage='verification'] .counts")).to_contain_text("stalled: see below")
    card.get_by_role("button", name="Settle these questions now").click()
    expect(page.locator("#stall-status")).to_have_text("Settled: 1 review.")
    expect(card).to_be_hidden()
    assert Question.objects.get(pk=split_question.pk).state == QuestionState.REVIEW
    expect(page.locator("#audit tbody tr[data-action='stalls.settle']")).to_have_count(1)
    assert page.console_errors == []
