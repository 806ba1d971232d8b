"""Present classes found by full multi-label annotation flow into the box pipeline (ILSVRC §3.3.3 → §3.2.1):
`multilabel.labeling` hands them to `boxes.services.on_leaves_present`."""

from __future__ import annotations

import pytest

from annotation.models import BoxJob, Task
from boxes import services as boxes
from tests import factories

pytestmark = pytest.mark.django_db


def test_every_present_leaf_of_a_finished_image_gets_one_box_job_with_a_draw_task():
    image = factories.ImageFactory()
    dog, cat = factories.ConceptFactory(), factories.ConceptFactory()
    assert boxes.on_leaves_present(image_id=image.pk, concept_ids=(dog.pk, cat.pk)) == 2
    jobs = BoxJob.objects.filter(image=image)
    assert sorted(jobs.values_list("concept_id", flat=True)) == sorted([dog.pk, cat.pk])
    assert Task.objects.filter(image=image, kind="box_draw").count() == 2
    # handed over again (a retried transaction, a rewound labeling finishing again): nothing doubles
    assert boxes.on_leaves_present(image_id=image.pk, concept_ids=(dog.pk, cat.pk)) == 0
    assert BoxJob.objects.filter(image=image).count() == 2
    assert Task.objects.filter(image=image, kind="box_draw").count() == 2


def test_an_image_with_no_present_leaf_starts_no_job():
    image = factories.ImageFactory()
    assert boxes.on_leaves_present(image_id=image.pk, concept_ids=()) == 0
    assert not BoxJob.objects.exists()
