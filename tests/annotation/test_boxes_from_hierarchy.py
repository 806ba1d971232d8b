"""Present classes found by full multi-label annotation flow into the box pipeline (ILSVRC §3.3.3 → §3.2.1)."""

from __future__ import annotations

import pytest

from annotation.models import BoxJob, Task
from hierarchy import events
from tests import factories

pytestmark = pytest.mark.django_db


def test_every_present_leaf_of_a_finished_image_gets_one_box_job_with_a_draw_task():
    image = factories.ImageFactory()
    dog, cat = factories.ConceptFactory(), factories.ConceptFactory()
    event = events.LeavesPresent(
        dataset_id=image.dataset_id,
        image_id=image.pk,
        hierarchy_id=1,
        labeling_id=1,
        concept_ids=(dog.pk, cat.pk),
    )
    events.announce(event)
    jobs = BoxJob.objects.filter(image=image)
    assert sorted(jobs.values_list("concept_id", flat=True)) == sorted([dog.pk, cat.pk])
    assert Task.objects.filter(image=image, kind="box_draw").count() == 2
    events.announce(event)  # announced again (a retried transaction): nothing doubles
    assert BoxJob.objects.filter(image=image).count() == 2
    assert Task.objects.filter(image=image, kind="box_draw").count() == 2


def test_an_image_with_no_present_leaf_starts_no_job():
    image = factories.ImageFactory()
    events.announce(
        events.LeavesPresent(
            dataset_id=image.dataset_id, image_id=image.pk, hierarchy_id=1, labeling_id=1, concept_ids=()
        )
    )
    assert not BoxJob.objects.exists()
