"""The worker page says why tasks stopped coming, in real Chromium: a worker blocked in a dataset (or resting
after a failed qualification) reads it under "No tasks are waiting" instead of nothing."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from gold.models import Block
from tests import factories
from tests.e2e.test_worker_page import sign_in

pytestmark = pytest.mark.browser


def test_a_blocked_worker_is_told_why_no_task_comes(page, live_server):
    dataset = factories.DatasetFactory(name="street-scenes")
    worker = factories.user_with_roles("ann", ("workers",)).worker
    Block.objects.create(worker=worker, dataset=dataset, kind="all", answered=25, correct=14, p_below=0.99)
    sign_in(page, live_server.url, "ann")
    expect(page.locator("#status")).to_contain_text("No tasks are waiting")
    standing = page.get_by_role("list", name="Why some tasks are not offered to you")
    expect(standing).to_be_visible()
    expect(standing.locator("li")).to_have_text(
        [
            "Your answers to check questions in street-scenes were too often wrong: its tasks are not offered "
            "to you any more."
        ]
    )
    assert page.console_errors == []


def test_a_worker_out_of_good_standing_on_verification_is_told_it_is_offered_less(
    page, live_server, monkeypatch
):
    import numpy as np

    from consensus import standing_lease
    from consensus.standing import WITHHOLD_MIN_GOOD, Standing

    worker = factories.user_with_roles("bo", ("workers",)).worker
    ids = np.array(sorted([worker.pk, *(worker.pk + 1000 + i for i in range(WITHHOLD_MIN_GOOD))]))
    kept = Standing(ids, np.where(ids == worker.pk, 0.05, 0.7), votes=np.full(ids.size, 40))
    monkeypatch.setattr(standing_lease, "cached_standing", lambda kind: (kept, 1234))  # the server's thread
    factories.TaskFactory(kind="question", topic="image_verify")  # waiting, and withheld from them
    sign_in(page, live_server.url, "bo")
    expect(page.locator("#status")).to_contain_text("No tasks are waiting")
    standing = page.get_by_role("list", name="Why some tasks are not offered to you")
    expect(standing.locator("li")).to_have_text(
        [
            "Fewer image checks (does this image show ...?) are offered to you for now: your answers to them have "
            "agreed too little with what other workers agreed on. Answer the ones you are given with care, and "
            "more will come."
        ]
    )
    assert page.console_errors == []
