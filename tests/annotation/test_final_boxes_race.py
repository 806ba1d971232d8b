"""Two transactions setting the final boxes of one image at once (a review decision's sync and an overlap
scan's) end with one row per box: the second one's insert waits for the first and updates the row (PostgreSQL:
ON CONFLICT DO UPDATE) instead of failing on the unique box (an IntegrityError answered 500 before)."""

from __future__ import annotations

import threading

import pytest
from django.db import transaction

from annotation.final_labels import FinalBoxRow, final_boxes_set
from annotation.models import Box, BoxState, FinalBox
from tests import factories
from tests.threads import a_lock_is_awaited, in_thread
from tests.waiting import GENEROUS_SECONDS

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_two_concurrent_syncs_of_one_image_keep_one_final_row_per_box_and_fail_neither():
    task = factories.TaskFactory()
    box = Box.objects.create(
        image=task.image, concept=task.concept, x1=1, y1=2, x2=30, y2=40, state=BoxState.ACCEPTED
    )
    row = FinalBoxRow(box.pk, task.image_id, task.concept_id, 1.0, 2.0, 30.0, 40.0)
    inserted, errors = threading.Event(), []

    def sync(hold: bool) -> None:
        with transaction.atomic():
            final_boxes_set(dataset_id=task.dataset_id, boxes=[row], image_ids=[task.image_id])
            inserted.set()
            # The other transaction read no row and inserts meanwhile: held until it is seen waiting on this one.
            if hold and not a_lock_is_awaited():
                errors.append(AssertionError("the second insert never waited on the first one's row"))

    @in_thread
    def first():
        try:
            sync(hold=True)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            inserted.set()

    @in_thread
    def second():
        try:
            inserted.wait(GENEROUS_SECONDS)
            sync(hold=False)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(GENEROUS_SECONDS)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    final = FinalBox.objects.get(box=box)
    assert (final.image_id, final.x1, final.y2) == (task.image_id, 1.0, 40.0)
