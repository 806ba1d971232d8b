"""The Quality endpoint: precision measured on gold subjects consensus decided, the crowd's gold accuracy, the
worker-accuracy histogram, votes per synset and the calibration tables of the dataset's own questions; nothing
of another dataset; a fixed number of queries."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.counters import counters_recount
from annotation.models import Box, BoxJob
from consensus.models import CalibrationTable, QuestionState
from tests import factories
from tests.organize.quality_scene import quality_scene, question

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene(dataset, other_dataset):
    return quality_scene(dataset, other_dataset)


def test_quality_measures_precision_on_gold_and_votes_per_synset(api_client, organizer, scene):
    body = api_client(organizer).get(f"/api/v1/datasets/{scene.pk}/quality").json()
    precision = {r["kind"]: r for r in body["gold_precision"]}
    verify = precision["image_verify"]
    assert (verify["accepted"], verify["accepted_gold_yes"]) == (3, 2)
    assert (verify["rejected"], verify["rejected_gold_no"]) == (1, 1)
    assert verify["precision"]["value"] == pytest.approx(2 / 3)
    assert verify["precision"]["low"] < 2 / 3 < verify["precision"]["high"]
    assert precision["box_quality"]["accepted_gold_yes"] == 1

    (accuracy,) = body["gold_answer_accuracy"]
    assert (accuracy["answers"], accuracy["correct"], accuracy["accuracy"]) == (2, 1, 0.5)

    workers = [b["workers"] for b in body["worker_accuracy"]]
    assert workers == [
        0,
        0,
        0,
        0,
        0,
        0,
        1,
        0,
        0,
        2,
    ]  # 0.62; 0.95 and 1.0 in the last bin; not the other dataset

    synsets = {(r["kind"], r["wnid"]): r for r in body["synsets"]}
    assert synsets[("image_verify", "n02084071")]["votes_per_question"] == 3.0
    cat = synsets[("image_verify", "n02121808")]
    assert (cat["questions"], cat["votes"], cat["review"]) == (2, 18, 1)
    assert body["hardest"][0]["wnid"] == "n02121808"

    (table,) = body["calibration_tables"]
    assert (table["kind"], table["wnid"], table["versions"]) == ("image_verify", "n02084071", 2)
    assert table["table"] == CalibrationTable.objects.filter(kind="image_verify").order_by("-id")[0].pk


def test_review_load_counts_reviewer_items_per_100_images_per_synset(api_client, organizer, scene):
    body = api_client(organizer).get(f"/api/v1/datasets/{scene.pk}/quality").json()
    cat, dog = body["review_load"]  # the heaviest first
    # Cats: two images, 18 votes, one question waiting for a reviewer.
    assert (cat["wnid"], cat["images"], cat["votes"], cat["votes_per_image"]) == ("n02121808", 2, 18, 9.0)
    assert (cat["review_open"], cat["review_decided"], cat["review_per_100_images"]) == (1, 0, 50.0)
    # Dogs: six images asked by verification (the box question's image is not counted: a box question is about
    # a box, and dogs have no box job here), 20 votes, one question a reviewer decided; the other dataset's dog
    # and its reviewed cat count nowhere here.
    assert (dog["wnid"], dog["images"], dog["votes"]) == ("n02084071", 6, 20)
    assert (dog["review_open"], dog["review_decided"], dog["review_items"]) == (0, 1, 1)
    assert dog["review_per_100_images"] == pytest.approx(100 / 6, abs=0.01)


def test_a_synset_only_boxed_counts_its_images_by_its_box_jobs(api_client, organizer, dataset):
    owl = factories.ConceptFactory(wnid="n01621127", name="owl")
    images = factories.ImageFactory.create_batch(4, dataset=dataset)
    for image in images:
        BoxJob.objects.create(dataset=dataset, image=image, concept=owl, state={}, max_boxes=5, max_rounds=3)
    box = Box.objects.create(image=images[0], concept=owl, x1=0, y1=0, x2=5, y2=5)
    question(dataset, owl, images[0], QuestionState.REVIEW, 3, 3, box=box, kind="box_quality")
    question(dataset, owl, images[1], QuestionState.ACCEPTED, 2, 0, kind="box_coverage")
    counters_recount(dataset.pk)
    (row,) = api_client(organizer).get(f"/api/v1/datasets/{dataset.pk}/quality").json()["review_load"]
    assert (row["wnid"], row["images"], row["votes"], row["review_open"]) == ("n01621127", 4, 8, 1)
    assert (row["votes_per_image"], row["review_per_100_images"]) == (2.0, 25.0)


def test_quality_takes_a_fixed_number_of_queries(api_client, organizer, scene, django_assert_max_num_queries):
    client = api_client(organizer)
    # Role, dataset, calibration tables, gold precision (items about images, about boxes), gold accuracy, the
    # histogram, votes per synset, the review load (reviewers' decisions, box jobs).
    with django_assert_max_num_queries(10), CaptureQueriesContext(connection) as captured:
        assert client.get(f"/api/v1/datasets/{scene.pk}/quality").status_code == 200
    # Questions are read only in the per-item and per-table subqueries (aliased U0), never scanned whole.
    scans = [
        q["sql"]
        for q in captured.captured_queries
        if re.search(r'FROM "consensus_question" (?!U\d)', q["sql"])
    ]
    assert not scans, "votes and review load per synset come from the question tally, not from every question"
