"""Two transactions creating the final label of one (image, class) at once keep both verdicts in one row: the
second one's insert waits for the first, skips the pair (PostgreSQL: ON CONFLICT DO NOTHING, no savepoint) and
merges its evidence into the committed row."""

from __future__ import annotations

import threading

import pytest
from django.db import transaction

from annotation.final_evidence import BINARY_VOTE, CONSENSUS
from annotation.final_labels import LabelVerdict, final_labels_record
from annotation.models import FinalLabel
from tests import factories
from tests.threads import a_lock_is_awaited, in_thread
from tests.waiting import GENEROUS_SECONDS

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_a_pair_created_by_two_transactions_at_once_keeps_both_verdicts_in_one_row():
    task = factories.TaskFactory()
    pair = (task.image_id, task.concept_id)
    inserted, errors = threading.Event(), []

    @in_thread
    def first():
        try:
            with transaction.atomic():
                final_labels_record(
                    dataset_id=task.dataset_id,
                    source=BINARY_VOTE,
                    verdicts=[LabelVerdict(*pair, present=False, yes=0, no=3)],
                )
                inserted.set()
                # Held until the second transaction's insert is seen waiting on this row, not for a fixed time.
                if not a_lock_is_awaited():
                    errors.append(AssertionError("the second insert never waited on the first one's row"))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            inserted.set()

    @in_thread
    def second():
        try:
            inserted.wait(GENEROUS_SECONDS)
            with transaction.atomic():
                final_labels_record(
                    dataset_id=task.dataset_id,
                    source=CONSENSUS,
                    verdicts=[LabelVerdict(*pair, present=True, yes=5, no=0, p=0.999)],
                )
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(GENEROUS_SECONDS)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    row = FinalLabel.objects.get(image_id=pair[0], concept_id=pair[1])
    assert set(row.evidence) == {BINARY_VOTE, CONSENSUS}
    assert (row.source, row.present) == (CONSENSUS, True)  # consensus outranks the plain vote
