"""Starting box jobs from a prediction set over HTTP: refusals name the field and store nothing, another
organizer's dataset or set is refused, a start is audited and a second start changes nothing; the thresholds
endpoint says when there is no calibration data."""

from __future__ import annotations

import pytest

from annotation.models import AuditEntry, Box, BoxJob
from predictions.models import BoxPrediction, PredictionSet
from tests import factories
from tests.annotation.boxhelpers import image
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene(dataset):
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    cat = factories.ConceptFactory(wnid="n02121808", name="domestic cat")
    dataset.concepts.add(dog)
    img = image(dataset)
    preds = PredictionSet.objects.create(dataset=dataset, name="det", source="upload", sha256="a" * 64)
    for x, score in ((10, 0.9), (200, 0.4)):
        BoxPrediction.objects.create(
            prediction_set=preds, image=img, concept=dog, x1=x, y1=10, x2=x + 100, y2=90, score=score
        )
    return {"dataset": dataset, "dog": dog, "cat": cat, "image": img, "set": preds}


def post(user, scene, body):
    return client_for(user).post(
        f"/api/v1/datasets/{scene['dataset'].pk}/box-jobs/from-predictions", body, format="json"
    )


def body(scene, **changes):
    return {
        "prediction_set": scene["set"].pk,
        "classes": [{"concept": "n02084071", "threshold": 0.5}],
        "where": "proposed",
    } | changes


def test_a_start_answers_per_class_and_is_audited_and_idempotent(organizer, scene):
    reply = post(organizer, scene, body(scene))
    assert reply.status_code == 201, reply.data
    assert reply.data["created"] == 1 and reply.data["where"] == "proposed"
    (dog,) = reply.data["classes"]
    assert (dog["concept"], dog["proposals_queued"], dog["proposals_below_threshold"]) == ("n02084071", 1, 1)
    assert dog["suggestion"]["threshold"] is None and "no calibration data" in dog["suggestion"]["note"]
    entry = AuditEntry.objects.get(action="boxes.start_from_predictions")
    assert entry.result["prediction_set"] == scene["set"].pk and entry.actor == organizer

    again = post(organizer, scene, body(scene))
    assert again.status_code == 201 and (again.data["created"], again.data["existing"]) == (0, 1)
    assert Box.objects.count() == 1 and BoxJob.objects.count() == 1


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"classes": [{"concept": "n02084071", "threshold": 1.5}]}, "classes"),
        ({"classes": [{"concept": "n02084071", "threshold": -0.1}]}, "classes"),
        ({"classes": [{"concept": "n02084071"}]}, "classes"),
        ({"classes": []}, "classes"),
        ({"classes": [{"concept": "n02084071", "threshold": 0.5}] * 2}, "classes"),
        ({"classes": [{"concept": "n00000000", "threshold": 0.5}]}, "classes"),
        ({"classes": [{"concept": "n02121808", "threshold": 0.5}]}, "classes"),  # not a class of the dataset
        ({"prediction_set": 999999}, "prediction_set"),
        ({"prediction_set": "x"}, "prediction_set"),
        ({"where": "everywhere"}, "where"),
        ({"where": "verified"}, "where"),  # no image is verified to show a dog yet
        ({"images": [999999]}, "where"),  # both images and where
        ({"max_boxes": 0}, "max_boxes"),
        ({"max_rounds": 100000}, "max_rounds"),
    ],
)
def test_a_bad_request_is_refused_naming_the_field_and_stores_nothing(organizer, scene, changes, field):
    reply = post(organizer, scene, body(scene, **changes))
    assert reply.status_code == 400, reply.data
    assert field in reply.data, reply.data
    assert not BoxJob.objects.exists() and not Box.objects.exists()
    assert not AuditEntry.objects.filter(action="boxes.start_from_predictions").exists()


def test_an_image_of_another_dataset_is_refused(organizer, scene):
    other = factories.DatasetFactory(organizers=[organizer])
    reply = post(
        organizer,
        scene,
        {k: v for k, v in body(scene).items() if k != "where"} | {"images": [image(other).pk]},
    )
    assert reply.status_code == 400 and "images" in reply.data
    assert not BoxJob.objects.exists()


def test_a_set_of_another_dataset_is_refused(organizer, scene):
    other = factories.DatasetFactory(organizers=[organizer])
    foreign = PredictionSet.objects.create(dataset=other, name="x", source="upload", sha256="b" * 64)
    reply = post(organizer, scene, body(scene, prediction_set=foreign.pk))
    assert reply.status_code == 400 and "prediction_set" in reply.data


def test_another_organizers_dataset_is_a_404(scene):
    stranger = factories.user_with_roles("stranger", ("organizers",))
    assert post(stranger, scene, body(scene)).status_code == 404
    assert not BoxJob.objects.exists()


def test_thresholds_list_each_class_of_the_set(organizer, scene):
    reply = client_for(organizer).get(
        f"/api/v1/datasets/{scene['dataset'].pk}/prediction-sets/{scene['set'].pk}/thresholds"
    )
    assert reply.status_code == 200
    (dog,) = reply.data
    assert (dog["concept"], dog["proposals"], dog["suggestion"]["threshold"]) == ("n02084071", 2, None)
    assert dog["suggestion"]["checked"] == 0
