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
