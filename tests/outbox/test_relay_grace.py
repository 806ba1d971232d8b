"""The relay leaves a pending row younger than its grace to the row's own on-commit send; a caller that knows
every on-commit send has happened (`simulate`'s operator once the crowd ran dry) passes a grace of 0."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox import services
from outbox.models import Message, MessageState
from tests import factories

pytestmark = pytest.mark.django_db


def test_a_row_inside_the_grace_is_left_to_its_own_send_unless_the_grace_is_zero(monkeypatch):
    message = Message.objects.create(
        task_name="gold.tasks.gold_quality_update", args=[1], dataset=factories.DatasetFactory()
    )
    sent = []
    monkeypatch.setattr(services, "message_send", lambda pk, countdown=0: sent.append(pk) or True)

    assert services.relay()["sent"] == 0
    assert sent == []
    assert services.relay(grace=timedelta(0))["sent"] == 1
    assert sent == [message.pk]
    assert (
        Message.objects.get(pk=message.pk).state == MessageState.PENDING
    )  # the send marks it, not the relay
