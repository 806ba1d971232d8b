"""Challenges from the organizer workspace: created only over a frozen split version of the organizer's own
dataset (audited; a duplicate name refused), teams added by username, and the challenge's page data: its teams
and a leaderboard that ranks a scored submission."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from annotation.models import AuditEntry
from benchmark.models import Challenge, SplitVersion, Team
from tests import factories
from tests.benchmark.conftest import finalize, labelled  # noqa: F401 (a fixture)
from tests.benchmark.test_api import perfect_results, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def versions(labelled):  # noqa: F811
    dataset = labelled["dataset"]
    finalize(dataset)
    call_command(
        "make_splits", "--dataset", dataset.name, "--freeze", stdout=io.StringIO(), stderr=io.StringIO()
    )
    version = SplitVersion.objects.get()
    return dataset, version


def test_an_organizer_creates_a_challenge_adds_a_team_and_sees_the_leaderboard(
    api_client, organizer, versions
):
    dataset, version = versions
    client = api_client(organizer)
    url = f"/api/v1/datasets/{dataset.pk}/challenges"
    r = client.post(
        url, {"name": "det-2026", "protocol": "coco", "split_version": version.number}, format="json"
    )
    assert r.status_code == 201, r.content
    challenge = Challenge.objects.get(pk=r.json()["id"])
    assert (challenge.split_version, challenge.submissions_per_window) == (version, 2)
    again = client.post(url, {"name": "det-2026", "protocol": "coco", "split_version": 1}, format="json")
    assert again.status_code == 409

    alice = factories.user_with_roles("alice", ())
    r = client.post(f"{url}/{challenge.pk}/teams", {"name": "alices", "members": ["alice"]}, format="json")
    assert r.status_code == 201 and r.json()["members"] == ["alice"]
    unknown = client.post(
        f"{url}/{challenge.pk}/teams", {"name": "ghosts", "members": ["nobody"]}, format="json"
    )
    assert unknown.status_code == 400 and "nobody" in unknown.json()["members"]

    assert submit(alice, challenge, perfect_results(challenge)).status_code == 201
    detail = client.get(f"{url}/{challenge.pk}").json()
    assert detail["challenge"]["primary_metric"] == "AP" and detail["teams"][0]["submissions"] == 1
    (row,) = detail["leaderboard"]
    assert (row["rank"], row["team"], row["metric"]) == (1, "alices", "AP") and row["value"] == pytest.approx(
        1.0
    )
    assert client.get(url).json()[0]["teams"] == 1
    actions = set(AuditEntry.objects.filter(dataset=dataset).values_list("action", flat=True))
    assert {"challenge.create", "challenge.team_add"} <= actions


def test_a_challenge_needs_a_frozen_version_of_the_same_dataset(api_client, organizer, versions):
    dataset, version = versions
    SplitVersion.objects.filter(pk=version.pk).update(frozen=False)
    client = api_client(organizer)
    url = f"/api/v1/datasets/{dataset.pk}/challenges"
    r = client.post(url, {"name": "det", "protocol": "coco", "split_version": version.number}, format="json")
    assert r.status_code == 400 and "frozen" in r.json()["detail"]
    missing = client.post(url, {"name": "det", "protocol": "coco", "split_version": 9}, format="json")
    assert missing.status_code == 400 and "no split version 9" in missing.json()["split_version"]
    assert not Challenge.objects.exists() and not Team.objects.exists()


def test_another_organizers_challenge_is_not_found(api_client, other_organizer, versions):
    dataset, version = versions
    challenge = Challenge.objects.create(name="det", dataset=dataset, split_version=version, protocol="coco")
    client = api_client(other_organizer)
    assert client.get(f"/api/v1/datasets/{dataset.pk}/challenges/{challenge.pk}").status_code == 404


def test_challenge_endpoints_take_a_fixed_number_of_queries(
    api_client, organizer, versions, django_assert_max_num_queries
):
    dataset, version = versions
    for n in range(4):
        challenge = Challenge.objects.create(
            name=f"c{n}", dataset=dataset, split_version=version, protocol="coco"
        )
        for t in range(3):
            team = Team.objects.create(challenge=challenge, name=f"t{t}")
            team.members.add(factories.user_with_roles(f"u{n}{t}", ()))
    client = api_client(organizer)
    with django_assert_max_num_queries(4):
        assert len(client.get(f"/api/v1/datasets/{dataset.pk}/challenges").json()) == 4
    with django_assert_max_num_queries(6):
        assert (
            len(client.get(f"/api/v1/datasets/{dataset.pk}/challenges/{challenge.pk}").json()["teams"]) == 3
        )
