"""The predictions API: an organizer uploads a file or a model server pushes JSON into their own dataset; a
refused file answers 400 naming each row and stores nothing; another organizer's dataset is a 404."""

from __future__ import annotations

import json

from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import AuditEntry
from predictions import api
from predictions.models import BoxPrediction, ClassScore, PredictionSet, PredictionSource
from tests import factories
from tests.conftest import client_for

from .conftest import as_bytes, coco


def upload(client, dataset, document, name="preds.json", **fields):
    data = document if isinstance(document, bytes) else as_bytes(document)
    body = {"file": SimpleUploadedFile(name, data, content_type="application/json"), **fields}
    return client.post(f"/api/v1/datasets/{dataset.pk}/prediction-sets/", body, format="multipart")


def push(client, dataset, document):
    return client.post(f"/api/v1/datasets/{dataset.pk}/prediction-sets/push", document, format="json")


def test_an_uploaded_file_becomes_a_set_and_the_same_file_answers_it_again(scene, organizer):
    client = client_for(organizer)
    first = upload(client, scene["dataset"], [coco(scene)], model_name="yolo", model_version="8")
    assert first.status_code == 201, first.content
    body = first.json()
    assert (body["name"], body["model_name"], body["model_version"], body["box_count"]) == (
        "preds.json",
        "yolo",
        "8",
        1,
    )
    assert body["created_by"] == "organizer" and body["source"] == PredictionSource.UPLOAD
    again = upload(client, scene["dataset"], [coco(scene)], name="renamed.json")
    assert again.status_code == 200 and again.json()["id"] == body["id"]
    assert PredictionSet.objects.count() == 1 and BoxPrediction.objects.count() == 1
    assert AuditEntry.objects.filter(action="predictions.import").count() == 1
    listed = client.get(f"/api/v1/datasets/{scene['dataset'].pk}/prediction-sets/")
    assert [s["id"] for s in listed.json()] == [body["id"]]
    one = client.get(f"/api/v1/datasets/{scene['dataset'].pk}/prediction-sets/{body['id']}")
    assert one.status_code == 200 and one.json()["sha256"] == body["sha256"]


def test_a_refused_file_answers_400_naming_each_row_and_stores_nothing(scene, organizer):
    document = [coco(scene), coco(scene, image_id=999999), coco(scene, bbox=[630, 0, 20, 10]), coco(scene)]
    response = upload(client_for(organizer), scene["dataset"], document)
    assert response.status_code == 400
    body = response.json()
    assert body["problem_count"] == 3 and "nothing was stored" in body["detail"]
    assert [(p["where"], p["code"]) for p in body["problems"]] == [
        ("detections[1]", "unknown_image"),
        ("detections[2]", "outside_image"),
        ("detections[3]", "duplicate"),
    ]
    assert "999999" in body["problems"][0]["reason"]
    assert not PredictionSet.objects.exists() and not BoxPrediction.objects.exists()


def test_a_file_that_is_not_json_is_refused_with_its_line(scene, organizer):
    response = upload(client_for(organizer), scene["dataset"], b'[\n{"image_id": ')
    assert response.status_code == 400
    assert response.json()["problems"][0]["where"] == "line 2"
    assert response.json()["problems"][0]["code"] == "bad_file"


def test_a_file_over_the_size_limit_is_a_413(scene, organizer, monkeypatch):
    monkeypatch.setattr(api, "MAX_FILE_BYTES", 10)
    response = upload(client_for(organizer), scene["dataset"], [coco(scene)])
    assert response.status_code == 413 and "at most 10" in response.json()["detail"]
    assert not PredictionSet.objects.exists()


def test_a_model_server_pushes_boxes_and_class_scores(scene, organizer):
    document = {
        "model": {"name": "resnet", "version": "50"},
        "detections": [coco(scene)],
        "classifications": [{"file_name": "second.jpg", "wnid": "n02121808", "score": 0.7}],
    }
    client = client_for(organizer)
    response = push(client, scene["dataset"], document)
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["source"], body["name"], body["box_count"], body["score_count"]) == (
        "model",
        "resnet 50",
        1,
        1,
    )
    assert ClassScore.objects.get().image_id == scene["second"].pk
    reordered = json.loads(json.dumps(document, sort_keys=True))
    again = push(client, scene["dataset"], dict(reversed(list(reordered.items()))))
    assert again.status_code == 200 and again.json()["id"] == body["id"]


def test_a_pushed_bad_row_is_named_and_non_finite_numbers_are_refused_by_the_parser(scene, organizer):
    client = client_for(organizer)
    response = push(
        client,
        scene["dataset"],
        {"classifications": [{"image_id": scene["first"].pk, "wnid": "n0", "score": 0.5}]},
    )
    assert response.status_code == 400
    assert response.json()["problems"][0] == {
        "where": "classifications[0]",
        "code": "unknown_class",
        "reason": "no class with wnid 'n0' in this dataset",
    }
    raw = b'{"detections": [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": NaN}]}'
    response = client.post(
        f"/api/v1/datasets/{scene['dataset'].pk}/prediction-sets/push", raw, content_type="application/json"
    )
    assert response.status_code == 400 and "score" in response.json()["detail"]
    assert not PredictionSet.objects.exists()


def test_another_organizers_dataset_is_a_404_and_a_worker_is_refused(scene, organizer, worker):
    other = factories.user_with_roles("other-organizer", ("organizers",))
    dataset = scene["dataset"]
    prediction_set = PredictionSet.objects.create(dataset=dataset, name="x", source="upload", sha256="x")
    client = client_for(other)
    assert upload(client, dataset, [coco(scene)]).status_code == 404
    assert push(client, dataset, [coco(scene)]).status_code == 404
    assert client.get(f"/api/v1/datasets/{dataset.pk}/prediction-sets/").status_code == 404
    assert client.get(f"/api/v1/datasets/{dataset.pk}/prediction-sets/{prediction_set.pk}").status_code == 404
    assert upload(client_for(worker), dataset, [coco(scene)]).status_code == 403
    assert PredictionSet.objects.count() == 1


def test_a_set_of_another_dataset_is_a_404_under_this_one(scene, organizer):
    mine = factories.DatasetFactory(organizers=[organizer])
    prediction_set = PredictionSet.objects.create(dataset=mine, name="x", source="upload", sha256="x")
    response = client_for(organizer).get(
        f"/api/v1/datasets/{scene['dataset'].pk}/prediction-sets/{prediction_set.pk}"
    )
    assert response.status_code == 404


def test_the_set_list_costs_the_same_queries_for_one_set_or_ten(scene, organizer):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_for(organizer)
    url = f"/api/v1/datasets/{scene['dataset'].pk}/prediction-sets/"
    PredictionSet.objects.create(
        dataset=scene["dataset"], name="0", source="upload", sha256="0", created_by=organizer
    )
    client.get(url)  # the first request of a client also reads its user's roles once
    with CaptureQueriesContext(connection) as one:
        assert len(client.get(url).json()) == 1
    for n in range(1, 10):
        PredictionSet.objects.create(
            dataset=scene["dataset"], name=str(n), source="upload", sha256=str(n), created_by=organizer
        )
    with CaptureQueriesContext(connection) as ten:
        assert len(client.get(url).json()) == 10
    assert len(ten) == len(one) == 2  # the dataset (scoped to its organizer), then the sets with their users
