"""`simulate --dataset ID` (issue 34): the simulated crowd works a dataset already on the platform, its own images
and the pipelines its organizer started, in-process and against a server with its own database
(`--server URL --organizer-token T`); no dataset is made, the simulated accounts are scoped to that dataset, and
an unknown, archived or another organizer's dataset is refused with a message naming why."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from rest_framework.authtoken.models import Token

from annotation.models import (
    Assignment,
    AssignmentState,
    Dataset,
    DatasetGrant,
    ReviewerGrant,
    Task,
    TaskState,
)
from consensus.binary_vote import vote_tasks_create
from consensus.models import Question, Vote
from crowd.models import Invitation
from tests import factories
from tests.simulator.test_simulate_own_database import simulate_elsewhere


def organizers_dataset(name="street-scenes", images=6, other_work=True, votes=True):
    """An organizer's dataset with fixed-majority votes started on its images, and beside it another dataset
    with open work the simulated crowd must never touch."""
    olga = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[olga], name=name)
    concept = factories.ConceptFactory(wnid="n02084071", name="dog")
    imgs = [factories.ImageFactory(dataset=dataset, width=120, height=90) for _ in range(images)]
    if votes:
        vote_tasks_create(dataset=dataset, concept=concept, images=imgs, answers_wanted=3)
    if other_work:
        elsewhere = factories.DatasetFactory(organizers=[olga], name="elsewhere")
        vote_tasks_create(
            dataset=elsewhere,
            concept=concept,
            images=[factories.ImageFactory(dataset=elsewhere) for _ in range(3)],
            answers_wanted=1,
        )
    return olga, dataset


def run(**options) -> dict:
    out = io.StringIO()
    call_command("simulate", no_progress=True, stdout=out, **options)
    return json.loads(out.getvalue())


@pytest.mark.django_db
def test_the_crowd_works_the_datasets_own_open_work_in_process():
    olga, dataset = organizers_dataset()
    datasets_before = Dataset.objects.count()
    summary = run(dataset=dataset.pk, workers=4, seed=2)
    assert Dataset.objects.count() == datasets_before, "no dataset was made"
    assert summary["scenario"] == "existing" and summary["dataset"] == dataset.pk
    # Six images, a majority of three answers each (two that agree settle a vote).
    answered = Assignment.objects.filter(task__dataset=dataset, state=AssignmentState.SUBMITTED).count()
    assert summary["tasks_by_kind"] == {"binary_vote": answered} and 12 <= answered <= 18
    assert not Task.objects.filter(dataset=dataset).exclude(state=TaskState.DONE).exists()
    assert Task.objects.exclude(dataset=dataset).filter(state=TaskState.OPEN).count() == 3, "untouched"
    assert summary["precision"] is None and "made up" in summary["truth"]
    assert summary["images"] == 6 and summary["votes_per_image"] == round(answered / 6, 4)
    # The simulated accounts may work on this dataset only.
    grants = DatasetGrant.objects.filter(worker__user__username__startswith="sim-")
    assert grants.count() == 4 and set(grants.values_list("dataset", flat=True)) == {dataset.pk}
    assert set(ReviewerGrant.objects.values_list("dataset", flat=True)) == {dataset.pk}


@pytest.mark.django_db
def test_verification_the_organizer_started_is_answered_by_the_simulated_crowd(api_client):
    olga, dataset = organizers_dataset(other_work=False, votes=False)
    started = api_client(olga).post(
        f"/api/v1/datasets/{dataset.pk}/verification/", {"concept": "n02084071"}, format="json"
    )
    assert started.status_code == 201, started.data
    summary = run(dataset=dataset.pk, workers=8, seed=1)
    assert summary["tasks_by_kind"].get("question", 0) > 0
    assert sum(summary["before"]["questions"].values()) == 6
    assert summary["before"]["questions"]["accepted"] == 0
    decided = summary["after"]["questions"]["accepted"] + summary["after"]["questions"]["rejected"]
    assert decided + summary["after"]["questions"]["review"] + summary["after"]["questions"]["open"] == 6
    assert decided == Question.objects.filter(dataset=dataset, state__in=["accepted", "rejected"]).count()
    # Every answer is a vote on the organizer's questions (with 8 workers and the default settings the
    # questions may well stay open: what the run is there to show before a crowd is paid).
    assert Vote.objects.filter(question__dataset=dataset).count() == summary["tasks_by_kind"]["question"]


@pytest.mark.django_db
def test_an_unknown_or_archived_dataset_is_refused_by_name():
    _, dataset = organizers_dataset(other_work=False)
    with pytest.raises(CommandError, match="no dataset has this id"):
        run(dataset=dataset.pk + 100, workers=2)
    Dataset.objects.filter(pk=dataset.pk).update(archived_at=timezone.now())
    with pytest.raises(CommandError, match="street-scenes.*is archived"):
        run(dataset=dataset.pk, workers=2)
    assert not Task.objects.filter(dataset=dataset).exclude(state=TaskState.OPEN).exists()
    with pytest.raises(CommandError, match="not with --compare-crowds"):
        run(dataset=dataset.pk, workers=2, compare_crowds=True)


@pytest.mark.django_db(transaction=True)
def test_against_a_server_the_token_must_organize_the_dataset(live_server, tmp_path):
    olga, dataset = organizers_dataset()
    omar = factories.user_with_roles("omar", ("organizers",))
    theirs = Token.objects.create(user=omar).key
    refused = simulate_elsewhere(
        tmp_path, "--server", live_server.url, "--organizer-token", theirs, "--dataset", str(dataset.pk)
    )
    assert refused.returncode != 0
    assert f"--dataset {dataset.pk}: dataset {dataset.pk} does not exist or is not one this organizer" in (
        refused.stderr
    )
    assert not Invitation.objects.exists(), "refused before any invitation was made"

    token = Token.objects.create(user=olga).key
    datasets_before = Dataset.objects.count()
    ran = simulate_elsewhere(
        tmp_path,
        "--server", live_server.url, "--organizer-token", token,
        "--dataset", str(dataset.pk), "--workers", "4", "--seed", "2",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    summary = json.loads(ran.stdout)
    assert set(summary["tasks_by_kind"]) == {"binary_vote"} and summary["submit_errors"] == 0
    assert not Task.objects.filter(dataset=dataset).exclude(state=TaskState.DONE).exists()
    assert Dataset.objects.count() == datasets_before
    invitations = Invitation.objects.filter(accepted_by__isnull=False)
    assert set(invitations.values_list("dataset", flat=True)) == {dataset.pk}
    assert {tuple(i.datasets.values_list("pk", flat=True)) for i in invitations} == {(dataset.pk,)}
    assert Task.objects.exclude(dataset=dataset).filter(state=TaskState.OPEN).count() == 3

    Dataset.objects.filter(pk=dataset.pk).update(archived_at=timezone.now())
    archived = simulate_elsewhere(
        tmp_path, "--server", live_server.url, "--organizer-token", token, "--dataset", str(dataset.pk)
    )
    assert archived.returncode != 0 and "is archived" in archived.stderr
