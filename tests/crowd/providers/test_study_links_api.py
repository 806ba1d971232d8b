"""Study links from the organizer workspace's Crowds page: listed per dataset, one per task kind (a second is
a 400, not a 500), opened and closed with PATCH while their identity (dataset, kind, participant parameter)
stays, and a closed link turns participants away."""

from __future__ import annotations

import pytest

from crowd.models import StudyLink
from tests import factories
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def create(client, dataset, kind="binary_vote", **extra):
    return client.post("/api/v1/studies/", {"dataset": dataset.pk, "kind": kind, **extra}, format="json")


def test_links_are_listed_per_dataset_and_one_kind_has_one_link(organizer, dataset):
    api = client_for(organizer)
    other = factories.DatasetFactory(organizers=[organizer], name="other")
    assert create(api, dataset).status_code == 201
    assert create(api, other).status_code == 201
    again = create(api, dataset)
    assert again.status_code == 400 and "unique" in str(again.json()).lower()
    listed = api.get("/api/v1/studies/", {"dataset": dataset.pk}).json()["results"]
    assert [row["dataset"] for row in listed] == [dataset.pk]
    assert api.get("/api/v1/studies/").json()["count"] == 2
    assert api.get("/api/v1/studies/", {"dataset": "x"}).status_code == 400


def test_patch_closes_and_reopens_a_link_and_refuses_to_change_its_identity(client, organizer, dataset):
    api = client_for(organizer)
    link = create(api, dataset, participant_param="PID").json()
    closed = api.patch(f"/api/v1/studies/{link['id']}/", {"active": False}, format="json")
    assert closed.status_code == 200 and closed.json()["active"] is False
    turned_away = client.get(f"/study/{link['key']}/", {"PID": "p1"})
    assert turned_away.status_code == 400 and b"this study is closed" in turned_away.content
    moved = api.patch(
        f"/api/v1/studies/{link['id']}/", {"kind": "box_draw", "participant_param": "X"}, format="json"
    )
    assert moved.status_code == 400 and set(moved.json()) == {"kind", "participant_param"}
    reopened = api.patch(
        f"/api/v1/studies/{link['id']}/",
        {"active": True, "completion_redirect": "https://example.org/done"},
        format="json",
    )
    assert reopened.status_code == 200
    row = StudyLink.objects.get(pk=link["id"])
    assert (row.active, row.kind, row.participant_param, row.completion_redirect) == (
        True,
        "binary_vote",
        "PID",
        "https://example.org/done",
    )
    assert api.put(f"/api/v1/studies/{link['id']}/", {"active": True}, format="json").status_code == 405


def test_another_organizer_cannot_see_or_change_a_link(organizer, dataset):
    link = create(client_for(organizer), dataset).json()
    other = client_for(factories.user_with_roles("org-b", ("organizers",)))
    assert other.get("/api/v1/studies/", {"dataset": dataset.pk}).json()["results"] == []
    assert other.patch(f"/api/v1/studies/{link['id']}/", {"active": False}, format="json").status_code == 404
    assert StudyLink.objects.get(pk=link["id"]).active is True
