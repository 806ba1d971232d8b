"""The challenge services (`benchmark.challenges.challenge_create` and `challenge_team_add`): a challenge needs a
frozen split version of its own dataset and a name no other challenge has; a team needs existing accounts and a
name its challenge does not have; each creation writes its audit entry with it, a refusal writes nothing."""

from __future__ import annotations

import pytest

from annotation.models import AuditEntry
from benchmark.challenges import FieldRefused, NameTaken, challenge_create, challenge_team_add
from benchmark.models import Challenge, SplitVersion, Team
from benchmark.services import BenchmarkError
from tests import factories

pytestmark = pytest.mark.django_db


def _version(dataset, number: int = 1, frozen: bool = True) -> SplitVersion:
    return SplitVersion.objects.create(
        dataset=dataset, number=number, seed=0, ratios={}, manifest={}, frozen=frozen
    )


def _create(dataset, actor, name: str = "det-2026", split_version: int = 1) -> Challenge:
    return challenge_create(
        dataset=dataset,
        name=name,
        protocol="coco",
        split_version=split_version,
        submissions_per_window=3,
        window_days=5,
        actor=actor,
    )


def test_a_challenge_over_a_frozen_version_is_created_and_audited(dataset, organizer):
    version = _version(dataset)
    challenge = _create(dataset, organizer)
    assert (challenge.split_version, challenge.protocol, challenge.window_days) == (version, "coco", 5)
    (entry,) = AuditEntry.objects.all()
    assert (entry.dataset, entry.action, entry.parameters) == (
        dataset,
        "challenge.create",
        {
            "name": "det-2026",
            "protocol": "coco",
            "split_version": 1,
            "submissions_per_window": 3,
            "window_days": 5,
        },
    )


def test_a_challenge_needs_a_frozen_version_of_its_own_dataset(dataset, organizer):
    _version(dataset, number=1, frozen=False)
    _version(factories.DatasetFactory(), number=2)
    with pytest.raises(BenchmarkError, match="frozen") as thawed:
        _create(dataset, organizer, split_version=1)
    assert not isinstance(thawed.value, FieldRefused)  # the API answers it under "detail"
    with pytest.raises(FieldRefused, match=f"no split version 2 in {dataset.name}") as elsewhere:
        _create(dataset, organizer, split_version=2)
    assert elsewhere.value.field == "split_version"
    assert not Challenge.objects.exists() and not AuditEntry.objects.exists()


def test_a_challenge_name_is_taken_across_datasets(dataset, organizer):
    other = factories.DatasetFactory()
    _version(dataset), _version(other)
    _create(other, organizer)
    with pytest.raises(NameTaken, match="a challenge named 'det-2026' exists already") as taken:
        _create(dataset, organizer)
    assert taken.value.field == "name"
    assert Challenge.objects.count() == 1 and AuditEntry.objects.filter(dataset=dataset).count() == 0


def test_a_team_of_existing_accounts_is_added_once_per_challenge_and_audited(dataset, organizer):
    _version(dataset)
    challenge, elsewhere = _create(dataset, organizer), _create(dataset, organizer, name="cls-2026")
    alice, bob = (factories.user_with_roles(name, ()) for name in ("alice", "bob"))
    team = challenge_team_add(
        challenge=challenge, name="ab", members=["bob", "alice", "bob"], actor=organizer
    )
    assert set(team.members.all()) == {alice, bob}
    entry = AuditEntry.objects.get(action="challenge.team_add")
    assert (entry.dataset, entry.parameters) == (
        dataset,
        {"challenge": "det-2026", "team": "ab", "members": ["alice", "bob"]},
    )
    with pytest.raises(NameTaken, match="det-2026 has a team named 'ab'"):
        challenge_team_add(challenge=challenge, name="ab", members=["alice"], actor=organizer)
    challenge_team_add(
        challenge=elsewhere, name="ab", members=["alice"], actor=organizer
    )  # another challenge
    assert Team.objects.count() == 2 and AuditEntry.objects.filter(action="challenge.team_add").count() == 2


def test_a_team_naming_unknown_accounts_is_refused_naming_each(dataset, organizer):
    _version(dataset)
    challenge = _create(dataset, organizer)
    factories.user_with_roles("alice", ())
    with pytest.raises(FieldRefused, match="no account named ghost, nobody") as unknown:
        challenge_team_add(
            challenge=challenge, name="t", members=["nobody", "alice", "ghost"], actor=organizer
        )
    assert unknown.value.field == "members"
    assert not Team.objects.exists() and AuditEntry.objects.filter(action="challenge.team_add").count() == 0
