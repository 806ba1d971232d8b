"""A dataset's own box jobs (multi-label's present classes, `boxes.services.on_leaves_present`) begin from the
prediction set its box settings name, proposals at or above the threshold asked QUALITY; without one they begin
with a DRAW. The setting is validated (a set of this dataset, a threshold in [0, 1]) and audited."""

from __future__ import annotations

import pytest

from annotation.models import AuditEntry, Box, BoxJob, BoxProvenance, BoxState, Task
from boxes import services as boxes
from boxes.models import BoxSettings
from consensus.models import Question, QuestionKind
from tests import factories
from tests.annotation.boxhelpers import image
from tests.boxes.test_proposals import prediction_set
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def dog():
    return factories.ConceptFactory(wnid="n02084071", name="dog")


def settings_set(client, dataset, body):
    return client.patch(f"/api/v1/datasets/{dataset.pk}/box-settings", body, format="json")


def test_present_classes_start_from_the_chosen_sets_proposals_above_the_threshold(dataset, dog):
    img = image(dataset)
    preds = prediction_set(
        dataset, [(img, dog, (10, 10, 110, 90), 0.9), (img, dog, (200, 200, 300, 300), 0.2)]
    )
    BoxSettings.objects.create(dataset=dataset, prediction_set=preds, proposal_threshold=0.5)
    assert boxes.on_leaves_present(image_id=img.pk, concept_ids=[dog.pk]) == 1
    (stored,) = Box.objects.filter(image=img)
    assert (stored.x1, stored.score, stored.provenance) == (10, 0.9, BoxProvenance.MODEL)
    assert stored.state == BoxState.PENDING
    assert Question.objects.filter(kind=QuestionKind.BOX_QUALITY, box=stored).exists()
    assert not Task.objects.filter(kind=boxes.DRAW_KIND).exists()
    assert BoxJob.objects.get(image=img).state["proposed"] == 1


def test_without_a_chosen_set_present_classes_start_with_a_draw(dataset, dog):
    img = image(dataset)
    prediction_set(dataset, [(img, dog, (10, 10, 110, 90), 0.9)])
    assert boxes.on_leaves_present(image_id=img.pk, concept_ids=[dog.pk]) == 1
    assert not Box.objects.exists()
    assert Task.objects.filter(kind=boxes.DRAW_KIND).count() == 1


def test_the_set_must_be_this_datasets_and_the_threshold_in_0_1(dataset, organizer):
    client = client_for(organizer)
    other = factories.DatasetFactory(organizers=[organizer])
    theirs = prediction_set(other, [], name="theirs")
    refused = settings_set(client, dataset, {"prediction_set": theirs.pk})
    assert refused.status_code == 400 and "in this dataset" in str(refused.data["prediction_set"])
    refused = settings_set(client, dataset, {"proposal_threshold": 1.5})
    assert refused.status_code == 400 and "proposal_threshold" in refused.data
    assert not BoxSettings.objects.exists()
    mine = prediction_set(dataset, [], name="mine")
    reply = settings_set(client, dataset, {"prediction_set": mine.pk, "proposal_threshold": 0.7})
    assert reply.status_code == 200, reply.data
    assert reply.data == {"draw_mode": "corners", "prediction_set": mine.pk, "proposal_threshold": 0.7}
    chosen = BoxSettings.objects.get(dataset=dataset)
    assert (chosen.prediction_set_id, chosen.proposal_threshold) == (mine.pk, 0.7)
    entry = AuditEntry.objects.get(dataset=dataset, action="box_settings.change")
    assert entry.parameters == {"prediction_set_id": mine.pk, "proposal_threshold": 0.7}
    cleared = settings_set(client, dataset, {"prediction_set": None})
    assert cleared.status_code == 200 and cleared.data["prediction_set"] is None
