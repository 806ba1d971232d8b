"""Extreme clicking as a dataset's draw mode, over HTTP: organizers set it (validated and audited); a DRAW task
queued under it says so and takes the four extreme points, stored with the box, which is their bounds; points
that are not the extremes, outside the image, or sent in the wrong mode are refused with a 400 naming the
field, and nothing is stored."""

from __future__ import annotations

import pytest

from annotation.models import AuditEntry, Box
from boxes.models import BoxExtremePoints, BoxSettings
from tests import factories
from tests.annotation.boxhelpers import image
from tests.annotation.test_boxes_api import next_draw, nothing_stored, submit
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

POINTS = {"top": [300, 100], "bottom": [280, 400], "left": [120, 250], "right": [520, 200]}


@pytest.fixture
def concept():
    return factories.ConceptFactory(wnid="n02084071", name="dog", gloss="a domesticated canid")


def draw_mode_set(client, dataset, mode):
    return client.patch(f"/api/v1/datasets/{dataset.pk}/box-settings", {"draw_mode": mode}, format="json")


def start(client, dataset, concept, images):
    reply = client.post(
        f"/api/v1/datasets/{dataset.pk}/box-jobs/",
        {"concept": concept.wnid, "images": [i.pk for i in images]},
        format="json",
    )
    assert reply.status_code == 201, reply.data


def test_the_draw_mode_defaults_to_corners_and_is_set_validated_and_audited(dataset, organizer):
    client = client_for(organizer)
    assert client.get(f"/api/v1/datasets/{dataset.pk}/box-settings").data == {
        "draw_mode": "corners",
        "prediction_set": None,
        "proposal_threshold": 0.5,
    }
    refused = draw_mode_set(client, dataset, "polygon")
    assert refused.status_code == 400 and "draw_mode" in refused.data
    assert not BoxSettings.objects.exists()
    reply = draw_mode_set(client, dataset, "extreme")
    assert reply.status_code == 200 and reply.data["draw_mode"] == "extreme"
    assert BoxSettings.objects.get(dataset=dataset).draw_mode == "extreme"
    entry = AuditEntry.objects.get(dataset=dataset)
    assert entry.action == "box_settings.change" and entry.parameters == {"draw_mode": "extreme"}
    assert entry.actor == organizer


def test_another_organizer_neither_reads_nor_sets_the_draw_mode(dataset):
    other = factories.user_with_roles("other", ("organizers",))
    client = client_for(other)
    assert client.get(f"/api/v1/datasets/{dataset.pk}/box-settings").status_code == 404
    assert draw_mode_set(client, dataset, "extreme").status_code == 404
    assert not BoxSettings.objects.exists()


def test_extreme_points_are_stored_with_the_box_which_is_their_bounds(dataset, organizer, concept):
    client = client_for(organizer)
    draw_mode_set(client, dataset, "extreme")
    start(client, dataset, concept, [image(dataset, width=640, height=480)])
    drawer = client_for(factories.user_with_roles("ann", ("workers",)))
    lease = next_draw(drawer)
    payload = lease["task"]["payload"]
    assert payload["draw_mode"] == "extreme" and "extreme points" in payload["instructions"]
    reply = submit(drawer, lease["id"], {"points": POINTS, "image": lease["task"]["image"]["ref"]})
    assert reply.status_code == 201, reply.data
    box = Box.objects.get()
    assert [box.x1, box.y1, box.x2, box.y2] == [120, 100, 520, 400]
    assert box.extreme_points.as_dict() == POINTS
    listed = client.get(f"/api/v1/datasets/{dataset.pk}/boxes/", {"state": "pending"}).data["results"]
    assert listed[0]["points"] == POINTS and listed[0]["x1"] == 120


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        ({"points": {**POINTS, "left": [320, 250]}}, "points.left is not the left-most point"),
        ({"points": {**POINTS, "top": [300, 260]}}, "points.top is not the top-most point"),
        ({"points": {**POINTS, "right": [641, 200]}}, "points.right (641, 200) lies outside the image"),
        ({"points": {k: v for k, v in POINTS.items() if k != "bottom"}}, '"points" must be an object'),
        ({"box": [120, 100, 520, 400]}, '"box": this task draws the box by extreme clicking: send "points"'),
        ({"points": POINTS, "none_left": True}, 'send either "points" or "none_left": true'),
        (
            {"points": {"top": [300, 100], "bottom": [300, 400], "left": [299, 250], "right": [301, 200]}},
            "each side must be at least 4 px",
        ),
    ],
)
def test_bad_extreme_points_are_refused_by_name_and_store_nothing(dataset, organizer, concept, answer, named):
    client = client_for(organizer)
    draw_mode_set(client, dataset, "extreme")
    start(client, dataset, concept, [image(dataset, width=640, height=480)])
    drawer = client_for(factories.user_with_roles("ann", ("workers",)))
    lease = next_draw(drawer)
    reply = submit(drawer, lease["id"], answer)
    assert reply.status_code == 400
    assert named in str(reply.data)
    assert nothing_stored() and not BoxExtremePoints.objects.exists()


def test_points_are_refused_on_a_corners_task_and_a_task_keeps_the_mode_it_was_queued_with(
    dataset, organizer, concept
):
    client = client_for(organizer)
    start(client, dataset, concept, [image(dataset, width=640, height=480)])
    draw_mode_set(client, dataset, "extreme")  # after the first DRAW was queued: it still drags corners
    drawer = client_for(factories.user_with_roles("ann", ("workers",)))
    lease = next_draw(drawer)
    assert lease["task"]["payload"]["draw_mode"] == "corners"
    reply = submit(drawer, lease["id"], {"points": POINTS})
    assert reply.status_code == 400
    assert '"points": this task draws the box by dragging its corners: send "box"' in str(reply.data)
    assert nothing_stored()
    assert submit(drawer, lease["id"], {"box": [120, 100, 520, 400]}, key="k2").status_code == 201
    box = Box.objects.get()
    assert not BoxExtremePoints.objects.filter(box=box).exists()
    listed = client.get(f"/api/v1/datasets/{dataset.pk}/boxes/", {"state": "pending"}).data["results"]
    assert listed[0]["points"] is None
