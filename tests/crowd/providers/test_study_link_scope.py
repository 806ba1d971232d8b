"""A study link names the datasets its participants work on (issue 34): a session takes tasks of those datasets
and of no other, whatever else the server holds; the organizer names only datasets they organize."""

from __future__ import annotations

import re

import pytest

from annotation.models import Assignment
from crowd.models import BundleSize, StudyLink
from tests import factories
from tests.conftest import client_for
from tests.crowd.providers.conftest import session_client

pytestmark = pytest.mark.django_db


def votes_in(dataset, n: int, priority: int = 0):
    return [
        factories.TaskFactory(image=factories.ImageFactory(dataset=dataset), priority=priority)
        for _ in range(n)
    ]


def create_link(client, dataset, **body):
    return client.post(
        "/api/v1/studies/",
        {"dataset": dataset.pk, "kind": "binary_vote", "participant_param": "PID", **body},
        format="json",
    )


def session(client, key: str, participant: str):
    response = client.get(f"/study/{key}/", {"PID": participant})
    assert response.status_code == 200, response.content
    return session_client(re.search(rb'data-session="([^"]+)"', response.content).group(1).decode())


def answer_all(session) -> list[int]:
    """Answer items until the bundle is complete or the queue has none; the datasets of the items answered."""
    seen = []
    for i in range(30):
        step = session.get("/api/v1/bundle/next").json()
        if step["assignment"] is None:
            return seen
        seen.append(Assignment.objects.get(pk=step["assignment"]["id"]).task.dataset_id)
        response = session.post(
            f"/api/v1/bundle/assignments/{step['assignment']['id']}/submit",
            {"answer": {"answer": True}},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"k-{i}",
        )
        assert response.status_code == 201, response.content
    raise AssertionError("the bundle never ended")


def test_a_study_link_participant_never_gets_a_task_of_a_dataset_the_link_does_not_name(
    client, organizer, dataset
):
    b = factories.DatasetFactory(organizers=[organizer])
    c = factories.DatasetFactory(organizers=[organizer])
    BundleSize.objects.create(dataset=dataset, kind="binary_vote", size=10)
    votes_in(dataset, 2)
    votes_in(b, 2)
    votes_in(c, 5, priority=9)  # more work, higher priority, not named
    made = create_link(client_for(organizer), dataset, datasets=[dataset.pk, b.pk])
    assert made.status_code == 201, made.data
    assert made.data["datasets"] == sorted([dataset.pk, b.pk])
    seen = answer_all(session(client, made.data["key"], "P-1"))
    assert sorted(seen) == sorted([dataset.pk] * 2 + [b.pk] * 2), "both named datasets, never c"


def test_a_link_naming_no_datasets_keeps_to_its_own(client, organizer, dataset):
    b = factories.DatasetFactory(organizers=[organizer])
    BundleSize.objects.create(dataset=dataset, kind="binary_vote", size=10)
    votes_in(dataset, 2)
    votes_in(b, 3)
    made = create_link(client_for(organizer), dataset)
    assert made.status_code == 201 and made.data["datasets"] == [dataset.pk]
    assert answer_all(session(client, made.data["key"], "P-2")) == [dataset.pk] * 2


def test_the_same_participant_in_two_studies_gets_each_studys_datasets_only(client, organizer, dataset):
    """A marketplace id is one worker across studies: the scope belongs to the session, not the worker."""
    b = factories.DatasetFactory(organizers=[organizer])
    BundleSize.objects.create(dataset=dataset, kind="binary_vote", size=10)
    BundleSize.objects.create(dataset=b, kind="binary_vote", size=10)
    votes_in(dataset, 2)
    votes_in(b, 2)
    api = client_for(organizer)
    first = session(client, create_link(api, dataset).data["key"], "same")
    second = session(client, create_link(api, b).data["key"], "same")
    step = first.get("/api/v1/bundle/next").json()  # the first session's lease stays open meanwhile
    assert Assignment.objects.get(pk=step["assignment"]["id"]).task.dataset_id == dataset.pk
    assert set(answer_all(second)) == {b.pk}


def test_a_link_scope_names_only_the_organizers_datasets_and_its_own(organizer, dataset):
    other = factories.DatasetFactory(organizers=[factories.user_with_roles("org-b", ("organizers",))])
    mine = factories.DatasetFactory(organizers=[organizer])
    api = client_for(organizer)
    refused = create_link(api, dataset, datasets=[dataset.pk, other.pk])
    assert refused.status_code == 403 and str(other.pk) in str(refused.data["detail"])
    without_own = create_link(api, dataset, datasets=[mine.pk])
    assert without_own.status_code == 400 and "datasets" in without_own.data
    assert not StudyLink.objects.exists()
    link = create_link(api, dataset).data
    widened = api.patch(f"/api/v1/studies/{link['id']}/", {"datasets": [dataset.pk, mine.pk]}, format="json")
    assert widened.status_code == 200 and widened.data["datasets"] == sorted([dataset.pk, mine.pk])
    stolen = api.patch(f"/api/v1/studies/{link['id']}/", {"datasets": [dataset.pk, other.pk]}, format="json")
    assert stolen.status_code == 403
    assert sorted(StudyLink.objects.get().datasets.values_list("pk", flat=True)) == sorted(
        [dataset.pk, mine.pk]
    )
