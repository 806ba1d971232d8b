"""A new dataset's "Getting started" checklist (its page showed five empty bars and empty tables with no next
step): upload, classes, gold (optional), start, workers, each ticked off from the data however it was made."""

from __future__ import annotations

import pytest

from crowd import invitations
from crowd.models import InvitationRole
from tests import factories
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def steps(organizer, dataset) -> dict[str, bool]:
    reply = client_for(organizer).get(f"/api/v1/datasets/{dataset.pk}/checklist")
    assert reply.status_code == 200, reply.content
    return {s["key"]: s["done"] for s in reply.json()["steps"]}


def test_the_steps_tick_off_as_the_dataset_is_set_up(organizer, dataset):
    assert steps(organizer, dataset) == {
        "images": False,
        "classes": False,
        "gold": False,
        "start": False,
        "crowd": False,
    }
    factories.ImageFactory(dataset=dataset)
    concept = factories.ConceptFactory(wnid="n02084071", name="dog")
    dataset.concepts.add(concept)
    assert steps(organizer, dataset) == {
        "images": True,
        "classes": True,
        "gold": False,
        "start": False,
        "crowd": False,
    }
    reply = client_for(organizer).post(
        f"/api/v1/datasets/{dataset.pk}/box-jobs/", {"concept": concept.wnid, "where": "all"}, format="json"
    )
    assert reply.status_code == 201, reply.content
    invitations.invitation_create(dataset=dataset, role=InvitationRole.WORKER, created_by=organizer)
    done = steps(organizer, dataset)
    assert done["start"] and done["crowd"] and not done["gold"]


def test_each_step_links_to_its_page_and_gold_is_optional(organizer, dataset):
    rows = client_for(organizer).get(f"/api/v1/datasets/{dataset.pk}/checklist").json()["steps"]
    by_key = {r["key"]: r for r in rows}
    assert [r["key"] for r in rows] == ["images", "classes", "gold", "start", "crowd"]
    assert by_key["images"]["href"] == f"/organize/datasets/{dataset.pk}/images/"
    assert by_key["gold"]["optional"] and not by_key["start"]["optional"]
    assert by_key["start"]["href"] == "#pipelines"
    other = factories.user_with_roles("other-org", ("organizers",))
    assert client_for(other).get(f"/api/v1/datasets/{dataset.pk}/checklist").status_code == 404
