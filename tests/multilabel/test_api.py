"""Organizer API for multi-label annotation: who may start and read it, what it returns, and its query count."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.imagerefs import image_ref
from multilabel.labeling import labeling_answer
from multilabel.models import ImageLabeling, LabelingStatus
from tests import factories

URL = "/api/v1/datasets/{}/multilabel/"


@pytest.fixture
def images(dataset):
    return [factories.ImageFactory(dataset=dataset) for _ in range(4)]


@pytest.mark.django_db
def test_hierarchies_are_listed_for_organizers_only(api_client, organizer, worker, tiny_hierarchy):
    reply = api_client(organizer).get("/api/v1/hierarchies/")
    assert reply.status_code == 200
    (item,) = reply.json()["results"]
    assert (item["name"], item["nodes"], item["leaves"]) == ("tiny", 7, 4)
    assert item["roots"][0] == "Is there ANY animal in this image?"
    assert api_client(worker).get("/api/v1/hierarchies/").status_code == 403


@pytest.mark.django_db
def test_organizer_starts_labeling_and_reads_progress_and_present_classes(
    api_client, organizer, dataset, tiny_hierarchy, images
):
    client = api_client(organizer)
    reply = client.post(
        URL.format(dataset.pk),
        {"hierarchy": tiny_hierarchy.pk, "images": [images[0].pk, images[1].pk]},
        format="json",
    )
    assert reply.status_code == 201, reply.json()
    assert reply.json() == {
        "created": 2,
        "already": 0,
        "order": "breadth_first",
        "engine": "consensus",
        "prediction_set": None,
    }
    labeling = ImageLabeling.objects.get(image=images[0])
    for node, present in [
        ("q:animal", False),
        ("q:vehicle", True),
        ("n00007846", False),
        ("n02958343", True),
    ]:
        labeling_answer(labeling_id=labeling.pk, node_id=node, present=present, yes_votes=2, no_votes=1)
    data = client.get(URL.format(dataset.pk)).json()
    assert data["progress"] == {
        "images": 2,
        "done": 1,
        "running": 1,
        "questions_decided": 4,
        "votes": 12,
        "present_labels": 1,
    }
    by_image = {r["image"]: r for r in data["results"]}
    assert by_image[images[0].pk]["present"] == [{"wnid": "n02958343", "name": "car", "source": "asked"}]
    assert by_image[images[0].pk]["status"] == LabelingStatus.DONE
    assert by_image[images[1].pk]["pending"] == "q:animal"


@pytest.mark.django_db
def test_multilabel_is_refused_to_workers_and_other_organizers(api_client, worker, dataset, tiny_hierarchy):
    other = factories.user_with_roles("other-organizer", ("organizers",))
    body = {"hierarchy": tiny_hierarchy.pk}
    assert api_client(worker).post(URL.format(dataset.pk), body, format="json").status_code == 403
    assert api_client(worker).get(URL.format(dataset.pk)).status_code == 403
    assert api_client(other).post(URL.format(dataset.pk), body, format="json").status_code == 404
    assert api_client(other).get(URL.format(dataset.pk)).status_code == 404
    assert not ImageLabeling.objects.exists()


@pytest.mark.django_db
def test_bad_requests_name_the_field(api_client, organizer, dataset, tiny_hierarchy, images):
    client = api_client(organizer)
    stranger = factories.ImageFactory()
    reply = client.post(URL.format(dataset.pk), {"hierarchy": 999}, format="json")
    assert reply.status_code == 400 and "hierarchy" in reply.json()
    reply = client.post(
        URL.format(dataset.pk), {"hierarchy": tiny_hierarchy.pk, "images": [stranger.pk]}, format="json"
    )
    assert reply.status_code == 400 and "images" in reply.json()
    reply = client.post(
        URL.format(dataset.pk), {"hierarchy": tiny_hierarchy.pk, "order": "random"}, format="json"
    )
    assert reply.status_code == 400 and "order" in reply.json()


@pytest.mark.django_db
def test_progress_query_count_does_not_grow_with_images(
    api_client, organizer, dataset, tiny_hierarchy, images
):
    client = api_client(organizer)
    client.post(URL.format(dataset.pk), {"hierarchy": tiny_hierarchy.pk}, format="json")
    with CaptureQueriesContext(connection) as few:
        client.get(URL.format(dataset.pk))
    for _ in range(6):
        factories.ImageFactory(dataset=dataset)
    client.post(URL.format(dataset.pk), {"hierarchy": tiny_hierarchy.pk}, format="json")
    with CaptureQueriesContext(connection) as more:
        client.get(URL.format(dataset.pk))
    assert len(more) == len(few)


@pytest.mark.django_db
def test_the_default_engine_keeps_the_examples_of_an_inner_node(
    api_client, organizer, worker, dataset, tiny_hierarchy, images
):
    """Issue 17: the consensus engine's `question` tasks dropped the "for example" names of a hierarchy question."""
    body = {"hierarchy": tiny_hierarchy.pk, "images": [images[0].pk]}
    assert api_client(organizer).post(URL.format(dataset.pk), body, format="json").status_code == 201
    reply = api_client(worker).get("/api/v1/tasks/next", {"kinds": "question"})
    assert reply.status_code == 200
    payload = reply.json()["task"]["payload"]
    assert payload["question"] == "Is there ANY animal in this image?"
    assert payload["examples"] == ["dog", "cat"]


@pytest.mark.django_db
def test_worker_sees_the_question_with_gloss_and_examples_and_nothing_else(
    api_client, organizer, worker, dataset, tiny_hierarchy, images
):
    body = {"hierarchy": tiny_hierarchy.pk, "engine": "vote"}
    api_client(organizer).post(URL.format(dataset.pk), body, format="json")
    reply = api_client(worker).get("/api/v1/tasks/next", {"kinds": "hierarchy_question"})
    assert reply.status_code == 200
    task = reply.json()["task"]
    assert task["kind"] == "hierarchy_question"
    assert task["payload"] == {
        "question": "Is there ANY animal in this image?",
        "concept": {"wnid": "q:animal", "name": "animal", "gloss": "gloss of animal"},
        "examples": ["dog", "cat"],
    }
    assert task["image"]["ref"] == image_ref(images[0].pk)
