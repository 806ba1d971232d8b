"""The box pipeline over HTTP: organizers start jobs and read progress and boxes; a worker's draw is refused
with a clear 400 (and nothing stored) when it is outside the image, inverted, not a number, a duplicate, or
about an image the worker has no task for."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.imagerefs import image_ref
from annotation.models import Assignment, AssignmentState, Box, BoxJob, BoxJobEvent, Task
from boxes import services as boxes
from tests import factories
from tests.annotation.boxhelpers import image, vote, workers
from tests.conftest import client_for, leased_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def concept():
    return factories.ConceptFactory(wnid="n02084071", name="dog", gloss="a domesticated canid")


@pytest.fixture
def started(dataset, organizer, concept):
    images = [image(dataset, width=640, height=480) for _ in range(3)]
    reply = client_for(organizer).post(
        f"/api/v1/datasets/{dataset.pk}/box-jobs/",
        {"concept": concept.wnid, "images": [i.pk for i in images[:2]]},
        format="json",
    )
    assert reply.status_code == 201, reply.data
    assert reply.data == {"created": 2, "existing": 0, "where": "images"}
    return images


def next_draw(client):
    reply = client.get("/api/v1/tasks/next", {"kinds": "box_draw"})
    assert reply.status_code == 200
    return reply.data


def submit(client, assignment_id, answer, key="k1"):
    return client.post(
        f"/api/v1/assignments/{assignment_id}/submit",
        {"answer": answer},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def nothing_stored():
    return (
        not Box.objects.exists()
        and not BoxJobEvent.objects.exists()
        and not Assignment.objects.filter(state=AssignmentState.SUBMITTED).exists()
    )


def test_organizer_starts_jobs_and_reads_progress(started, dataset, organizer, concept):
    client = client_for(organizer)
    again = client.post(
        f"/api/v1/datasets/{dataset.pk}/box-jobs/", {"concept": concept.wnid, "where": "all"}, format="json"
    )
    assert again.data == {"created": 1, "existing": 2, "where": "all"}
    progress = client.get(f"/api/v1/datasets/{dataset.pk}/box-jobs/", {"concept": concept.wnid})
    assert progress.status_code == 200
    assert progress.data["total"] == 3 and progress.data["status_counts"]["needs_draw"] == 3
    assert progress.data["review_reasons"] == {}


def test_starting_jobs_refuses_unknown_concepts_and_foreign_images(dataset, organizer, concept):
    client = client_for(organizer)
    other = image(factories.DatasetFactory())
    reply = client.post(f"/api/v1/datasets/{dataset.pk}/box-jobs/", {"concept": "n0"}, format="json")
    assert reply.status_code == 400 and "no concept" in str(reply.data["concept"])
    reply = client.post(
        f"/api/v1/datasets/{dataset.pk}/box-jobs/",
        {"concept": concept.wnid, "images": [other.pk]},
        format="json",
    )
    assert reply.status_code == 400 and str(other.pk) in str(reply.data["images"])
    assert not BoxJob.objects.exists()


def test_a_worker_cannot_start_jobs_or_read_boxes(started, dataset, worker):
    client = client_for(worker)
    assert (
        client.post(f"/api/v1/datasets/{dataset.pk}/box-jobs/", {"concept": "x"}, format="json").status_code
        == 403
    )
    assert client.get(f"/api/v1/datasets/{dataset.pk}/boxes/").status_code == 403


def test_the_draw_task_shows_the_concept_and_the_image_size(started, worker):
    task = next_draw(client_for(worker))["task"]
    assert task["kind"] == "box_draw"
    assert task["payload"]["concept"] == {"wnid": "n02084071", "name": "dog", "gloss": "a domesticated canid"}
    assert task["payload"]["boxes"] == [] and task["image"]["width"] == 640
    assert "job" not in task["payload"]


@pytest.mark.parametrize(
    ("box", "problem"),
    [
        ([600, 10, 700, 90], "outside the image"),
        ([-1, 10, 100, 90], "outside the image"),
        ([100, 10, 100, 90], "x2 (100) must be greater than x1 (100)"),
        ([120, 10, 100, 90], "x2 (100) must be greater than x1 (120)"),
        ([10, 90, 100, 10], "y2 (10) must be greater than y1 (90)"),
        (["NaN", 10, 100, 90], "finite"),
        ([10, 10, "Infinity", 90], "finite"),
        ([10, 10, 12, 90], "at least 4 px"),
        ([10, 10, 100], "4 numbers"),
        ([True, 10, 100, 90], "must be a number"),
        ("10,10,100,90", "4 numbers"),
    ],
)
def test_a_bad_draw_is_refused_with_its_reason_and_nothing_is_stored(started, worker, box, problem):
    client = client_for(worker)
    assignment = next_draw(client)
    reply = submit(client, assignment["id"], {"box": box})
    assert reply.status_code == 400
    assert problem in str(reply.data["answer"])
    assert nothing_stored()


def test_a_raw_nan_in_the_json_body_is_refused(started, worker):
    client = client_for(worker)
    assignment = next_draw(client)
    reply = client.generic(
        "POST",
        f"/api/v1/assignments/{assignment['id']}/submit",
        '{"answer": {"box": [NaN, 10, 100, 90]}}',
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="k1",
    )
    assert reply.status_code == 400
    assert nothing_stored()


def test_a_draw_on_an_image_without_a_task_is_refused(started, worker, other_worker):
    client = client_for(worker)
    assignment = next_draw(client)
    wrong_image = started[2].pk
    for named in (image_ref(wrong_image), wrong_image, leased_task(assignment).image_id):
        # another image's reference, and ids (even the right one: leases name images by reference only)
        reply = submit(client, assignment["id"], {"box": [10, 10, 100, 90], "image": named})
        assert reply.status_code == 400 and "names another image" in str(reply.data["answer"])
        assert str(wrong_image) not in str(reply.data["answer"]), "the refusal names no image id"
    # another worker's assignment is not theirs to answer at all
    reply = submit(client_for(other_worker), assignment["id"], {"box": [10, 10, 100, 90]})
    assert reply.status_code == 404
    assert nothing_stored()


def test_box_and_none_left_together_are_refused(started, worker):
    client = client_for(worker)
    assignment = next_draw(client)
    reply = submit(client, assignment["id"], {"box": [10, 10, 100, 90], "none_left": True})
    assert reply.status_code == 400 and "exactly one" in str(reply.data["answer"])
    assert nothing_stored()


def test_a_box_within_5_px_of_an_accepted_box_is_refused_as_its_duplicate(started, worker):
    crowd = workers(6, prefix="v")
    client = client_for(worker)
    first = next_draw(client)
    assert (
        submit(
            client, first["id"], {"box": [10.5, 10, 100, 90], "image": first["task"]["image"]["ref"]}
        ).status_code
        == 201
    )
    vote(crowd, "box_quality", True)
    vote(crowd, "box_coverage", False)
    box = Box.objects.get()
    drawer = client_for(crowd[0].user)
    again = next_draw(drawer)
    if again["task"]["image"]["ref"] != image_ref(box.image_id):  # the other image's first draw: hand it back
        assert drawer.post(f"/api/v1/assignments/{again['id']}/release").status_code == 200
        again = next_draw(drawer)
    assert again["task"]["payload"]["boxes"] == [{"id": box.pk, "box": [10.5, 10.0, 100.0, 90.0]}]
    reply = submit(drawer, again["id"], {"box": [12, 12, 103, 94]})
    assert reply.status_code == 400 and f"duplicate of box {box.pk}" in str(reply.data["answer"])
    assert Box.objects.count() == 1
    # an adjacent instance sharing an edge is fine
    assert submit(drawer, again["id"], {"box": [100, 10, 180, 90]}, key="k2").status_code == 201
    assert Box.objects.count() == 2


def test_boxes_list_filters_by_state_and_keeps_queries_flat(started, dataset, organizer, worker):
    crowd = workers(6, prefix="v")
    for w in (worker, crowd[5].user):
        client = client_for(w)
        assignment = next_draw(client)
        assert submit(client, assignment["id"], {"box": [10, 10, 100, 90]}).status_code == 201
    vote(crowd[:3], "box_quality", True)
    org = client_for(organizer)
    url = f"/api/v1/datasets/{dataset.pk}/boxes/"
    with CaptureQueriesContext(connection) as queries:
        accepted = org.get(url)
    assert accepted.status_code == 200 and accepted.data["count"] == 1
    assert len(queries) <= 6
    row = accepted.data["results"][0]
    assert (row["x1"], row["y2"], row["state"], row["concept"]) == (10.0, 90.0, "accepted", "n02084071")
    assert org.get(url, {"state": "pending"}).data["count"] == 1
    assert org.get(url, {"state": "bogus"}).status_code == 400
    assert Task.objects.filter(kind="box_coverage").count() == 1
    assert boxes.status_counts(dataset)["awaiting_coverage"] == 1


def final_label(image, concept, present):
    from annotation.models import FinalLabel

    FinalLabel.objects.create(
        dataset=image.dataset, image=image, concept=concept, present=present, source="consensus"
    )


def test_boxing_starts_by_default_only_where_the_class_is_verified_present(dataset, organizer, concept):
    shown, absent, unknown = (image(dataset) for _ in range(3))
    final_label(shown, concept, True)
    final_label(absent, concept, False)
    other = factories.ConceptFactory(wnid="n02121808", name="cat")
    final_label(unknown, other, True)
    client = client_for(organizer)
    reply = client.post(f"/api/v1/datasets/{dataset.pk}/box-jobs/", {"concept": concept.wnid}, format="json")
    assert reply.status_code == 201, reply.data
    assert reply.data == {"created": 1, "existing": 0, "where": "verified"}
    assert list(BoxJob.objects.values_list("image_id", flat=True)) == [shown.pk]


def test_boxing_where_nothing_is_verified_is_refused_with_the_way_out(dataset, organizer, concept):
    image(dataset)
    client = client_for(organizer)
    reply = client.post(f"/api/v1/datasets/{dataset.pk}/box-jobs/", {"concept": concept.wnid}, format="json")
    assert reply.status_code == 400
    assert "no image of this dataset is verified to show n02084071" in str(reply.data["where"])
    assert '"where": "all"' in str(reply.data["where"])
    assert not BoxJob.objects.exists()
    both = client.post(
        f"/api/v1/datasets/{dataset.pk}/box-jobs/",
        {"concept": concept.wnid, "where": "all", "images": [1]},
        format="json",
    )
    assert both.status_code == 400 and "not both" in str(both.data["where"])
