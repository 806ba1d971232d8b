"""The settings page's endpoints for settings that had only an API or none (issue 34, items 2 and 4): whether
the settings fit the crowd (with the presets, which the settings' own validators accept), worker instructions
per stage (carried by every lease of the stage, gold alike), tasks per study-link session, shifting the
priority of waiting tasks, and pay per stage. Each refusal is a 400 naming the field, with nothing stored."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import queue
from annotation.models import AuditEntry, DatasetGrant, Task, TaskInstructions
from consensus.creation import Target, questions_create
from consensus.models import QuestionKind
from crowd.models import BundleSize, Invitation, InvitationRole
from crowd.providers.base import bundle_size_for
from gold.models import Block, GoldItem, WorkerScore
from organize.models import CostSettings
from tests import factories
from tests.conftest import client_for, leased_task
from tests.consensus.conftest import concept, make_images, make_workers, small_settings  # noqa: F401

pytestmark = pytest.mark.django_db


def url(dataset, path: str) -> str:
    return f"/api/v1/datasets/{dataset.pk}/{path}"


def worked(worker, dataset) -> None:
    """`worker` has taken (and answered) a task of `dataset`."""
    task = factories.TaskFactory(image=factories.ImageFactory(dataset=dataset), kind="binary_vote")
    assignment = queue.task_lease_next(worker=worker, kinds_wanted=("binary_vote",), dataset_id=dataset.pk)
    assert assignment is not None and assignment.task_id == task.pk


# --- crowd check and presets ------------------------------------------------------------------------------------


def test_the_default_settings_warn_that_four_workers_cannot_calibrate(organizer, dataset):
    for worker in make_workers(4):
        worked(worker, dataset)
    reply = client_for(organizer).get(url(dataset, "crowd-check"))
    assert reply.status_code == 200, reply.content
    body = reply.json()
    assert body["crowd"] == {"joined": 4, "qualified": 0, "qualification_required": False}
    warnings = {w["code"]: w for w in body["warnings"]}
    assert set(warnings) == {"calibration_votes", "vote_cap"}
    assert (warnings["calibration_votes"]["needed"], warnings["calibration_votes"]["crowd"]) == (10, 4)
    assert warnings["calibration_votes"]["message"].startswith(
        "Calibration needs 10 distinct workers per question; 4 have joined this dataset."
    )
    assert "lower the calibration votes to at most 4" in warnings["calibration_votes"]["message"]


def test_values_being_typed_are_checked_before_they_are_saved(organizer, dataset):
    for worker in make_workers(4):
        worked(worker, dataset)
    reply = client_for(organizer).get(url(dataset, "crowd-check") + "?calibration_votes=3&vote_cap=4")
    assert reply.status_code == 200 and reply.json()["warnings"] == []
    reply = client_for(organizer).get(url(dataset, "crowd-check") + "?calibration_votes=0")
    assert reply.status_code == 400 and "calibration_votes" in reply.json()


def test_the_crowd_counts_invited_workers_and_qualification_but_not_blocked_ones(
    organizer,
    dataset,
    concept,  # noqa: F811
):
    invited, working, blocked = make_workers(3)
    Invitation.objects.create(
        dataset=dataset,
        role=InvitationRole.WORKER,
        token_hash="a" * 64,
        created_by=organizer,
        expires_at=timezone.now() + timedelta(days=1),
        accepted_at=timezone.now(),
        accepted_by=invited.user,
    )
    worked(working, dataset)
    worked(blocked, dataset)
    Block.objects.create(worker=blocked, dataset=dataset, kind="all", answered=10, correct=2, p_below=0.99)
    image = factories.ImageFactory(dataset=dataset)
    GoldItem.objects.create(
        dataset=dataset, kind=QuestionKind.IMAGE_VERIFY, concept=concept, image=image, answer=True
    )
    WorkerScore.objects.create(
        worker=working,
        dataset=dataset,
        kind=QuestionKind.IMAGE_VERIFY,
        mean=0.9,
        lower=0.8,
        p_below=0.1,
        qualified=True,
    )
    body = client_for(organizer).get(url(dataset, "crowd-check")).json()
    assert body["crowd"] == {"joined": 2, "qualified": 1, "qualification_required": True}
    assert "2 have joined this dataset (1 has qualified so far)" in body["warnings"][0]["message"]


def test_the_crowd_counts_workers_granted_the_dataset_by_an_invitation_to_another(organizer, dataset):
    """A worker invited elsewhere with this dataset in the invitation's scope is one of its crowd, before they
    take any of its tasks."""
    (granted,) = make_workers(1)
    assert client_for(organizer).get(url(dataset, "crowd-check")).json()["crowd"]["joined"] == 0
    DatasetGrant.objects.create(worker=granted, dataset=dataset)
    assert client_for(organizer).get(url(dataset, "crowd-check")).json()["crowd"]["joined"] == 1


def test_each_preset_is_accepted_by_the_settings_it_fills(organizer, dataset):
    client = client_for(organizer)
    presets = {p["name"]: p for p in client.get(url(dataset, "settings-presets")).json()["presets"]}
    assert [p["title"] for p in presets.values()] == ["Small in-house team", "Open crowd"]
    assert presets["small_team"]["needs_workers"] == 5
    assert presets["open_crowd"]["needs_workers"] == 12
    for preset in presets.values():
        reply = client.patch(url(dataset, "consensus-settings"), preset["consensus"], format="json")
        assert reply.status_code == 200, (preset["name"], reply.content)
        reply = client.patch(url(dataset, "gold-settings"), preset["gold"], format="json")
        assert reply.status_code == 200, (preset["name"], reply.content)
        check = client.get(url(dataset, "crowd-check")).json()
        assert check["calibration_votes"] == preset["consensus"]["calibration_votes"]


def test_another_organizer_cannot_read_or_change_these_settings(dataset, other_organizer):
    client = client_for(other_organizer)
    for path in ("crowd-check", "settings-presets", "instructions", "bundle-sizes", "task-priorities"):
        assert client.get(url(dataset, path)).status_code == 404, path
    reply = client.patch(url(dataset, "instructions"), {"kind": "image_verify", "text": "x"}, format="json")
    assert reply.status_code == 404 and not TaskInstructions.objects.exists()


# --- instructions -------------------------------------------------------------------------------------------------


def test_instructions_are_stored_per_stage_audited_and_removed_by_an_empty_text(organizer, dataset):
    client = client_for(organizer)
    reply = client.patch(
        url(dataset, "instructions"),
        {"kind": "image_verify", "text": "  Say yes only\r\n- for photos \n"},
        format="json",
    )
    assert reply.status_code == 200, reply.content
    stages = {s["kind"]: s for s in reply.json()["stages"]}
    assert stages["image_verify"]["text"] == "Say yes only\n- for photos"
    assert stages["box_draw"]["text"] == "" and "question" not in stages
    assert AuditEntry.objects.get(action="instructions.change").parameters == {
        "kind": "image_verify",
        "characters": 25,
    }
    reply = client.patch(url(dataset, "instructions"), {"kind": "image_verify", "text": ""}, format="json")
    assert reply.status_code == 200 and not TaskInstructions.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "question", "text": "x"}, "kind"),
        ({"kind": "nonsense", "text": "x"}, "kind"),
        ({"kind": "box_draw", "text": "x" * 5001}, "text"),
        ({"kind": "box_draw"}, "text"),
    ],
)
def test_refused_instructions_name_the_field_and_store_nothing(organizer, dataset, body, field):
    reply = client_for(organizer).patch(url(dataset, "instructions"), body, format="json")
    assert reply.status_code == 400 and field in reply.json(), reply.content
    assert not TaskInstructions.objects.exists() and not AuditEntry.objects.exists()


def test_a_lease_carries_the_instructions_of_its_stage_and_dataset_only(
    organizer,
    dataset,
    worker,
    concept,  # noqa: F811
):
    client = client_for(organizer)
    text = 'Answer yes only for photos.\n\n<img src=x onerror="alert(1)">'
    client.patch(url(dataset, "instructions"), {"kind": "image_verify", "text": text}, format="json")
    client.patch(
        url(dataset, "instructions"), {"kind": "box_draw", "text": "Draw tight boxes."}, format="json"
    )
    small_settings(dataset, calibration_votes=1)
    questions_create(
        dataset=dataset,
        kind=QuestionKind.IMAGE_VERIFY,
        concept=concept,
        targets=[Target(image=make_images(dataset, 1)[0])],
    )
    body = client_for(worker).get("/api/v1/tasks/next").json()
    assert leased_task(body).topic == "image_verify"
    assert body["task"]["instructions"] == text  # stored as typed; the page renders it as text
    other = factories.DatasetFactory(organizers=[organizer])
    factories.TaskFactory(image=factories.ImageFactory(dataset=other), kind="binary_vote")
    body = (
        client_for(factories.user_with_roles("w9", ("workers",)))
        .get(f"/api/v1/tasks/next?dataset={other.pk}")
        .json()
    )
    assert body["task"]["instructions"] == ""


# --- tasks per session ----------------------------------------------------------------------------------------


def test_session_sizes_are_set_per_kind_and_reset_to_the_default(organizer, dataset, settings):
    client = client_for(organizer)
    body = client.get(url(dataset, "bundle-sizes")).json()
    default = settings.CROWDLABEL["BUNDLE_SIZE"]
    assert body["default_size"] == default and all(row["default"] for row in body["kinds"])
    reply = client.patch(url(dataset, "bundle-sizes"), {"sizes": {"binary_vote": 25}}, format="json")
    assert reply.status_code == 200, reply.content
    rows = {row["kind"]: row for row in reply.json()["kinds"]}
    assert rows["binary_vote"] == {"kind": "binary_vote", "size": 25, "default": False, "study_link": None}
    assert bundle_size_for(dataset.pk, "binary_vote") == 25
    client.patch(url(dataset, "bundle-sizes"), {"sizes": {"binary_vote": None}}, format="json")
    assert bundle_size_for(dataset.pk, "binary_vote") == default
    assert AuditEntry.objects.filter(action="bundle_sizes.change").count() == 2


@pytest.mark.parametrize(
    "sizes", [{"binary_vote": 5, "nonsense": 5}, {"binary_vote": 5, "box_draw": 0}, {"box_draw": 501}, {}]
)
def test_a_refused_session_size_names_it_and_stores_nothing(organizer, dataset, sizes):
    reply = client_for(organizer).patch(url(dataset, "bundle-sizes"), {"sizes": sizes}, format="json")
    assert reply.status_code == 400 and "sizes" in reply.json(), reply.content
    assert not BundleSize.objects.exists()


# --- task priorities ------------------------------------------------------------------------------------------


def test_shifting_a_class_moves_only_its_waiting_open_pool_tasks(organizer, dataset):
    dog, cat = (
        factories.ConceptFactory(wnid="n02084071", name="dog"),
        factories.ConceptFactory(wnid="n02121808"),
    )
    image = factories.ImageFactory(dataset=dataset)
    dogs = [factories.TaskFactory(image=image, concept=dog, priority=p) for p in (0, 10)]
    cats = factories.TaskFactory(image=image, concept=cat)
    gold = factories.TaskFactory(image=image, concept=dog, pool="gold")
    done = factories.TaskFactory(image=image, concept=dog, state="done")
    client = client_for(organizer)
    reply = client.post(
        url(dataset, "task-priorities"), {"change": 30, "concept": "n02084071"}, format="json"
    )
    assert reply.status_code == 200, reply.content
    assert reply.json()["changed"] == 2
    priorities = dict(Task.objects.values_list("pk", "priority"))
    assert [priorities[t.pk] for t in dogs] == [30, 40]  # the pipelines' order inside the group is kept
    assert (priorities[cats.pk], priorities[gold.pk], priorities[done.pk]) == (0, 0, 0)
    groups = {g["concept"]: g for g in reply.json()["groups"]}
    assert (groups["n02084071"]["min_priority"], groups["n02084071"]["max_priority"]) == (30, 40)
    assert AuditEntry.objects.get(action="task_priorities.shift").result == {"changed": 2}
    for _ in range(8):  # repeated shifts stop at the bound
        client.post(url(dataset, "task-priorities"), {"change": 100, "stage": "binary_vote"}, format="json")
    assert Task.objects.get(pk=dogs[1].pk).priority == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"change": 0}, "change"),
        ({"change": 101}, "change"),
        ({"change": 5, "stage": "nonsense"}, "stage"),
        ({"change": 5, "concept": "n99999999"}, "concept"),
        ({"change": 5, "stage": "box_draw"}, "change"),  # nothing of that stage waits
    ],
)
def test_a_refused_shift_names_the_field_and_changes_nothing(organizer, dataset, body, field):
    factories.TaskFactory(image=factories.ImageFactory(dataset=dataset))
    reply = client_for(organizer).post(url(dataset, "task-priorities"), body, format="json")
    assert reply.status_code == 400 and field in reply.json(), reply.content
    assert set(Task.objects.values_list("priority", flat=True)) == {0}
    assert not AuditEntry.objects.exists()


# --- pay per stage --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [({"rewards": {"image_verify": 0.02, "nonsense": 0.1}}, "rewards"), ({"currency": "US"}, "currency")],
)
def test_pay_names_an_unknown_stage_or_currency_and_stores_nothing(organizer, dataset, body, field):
    reply = client_for(organizer).patch(url(dataset, "cost-settings"), body, format="json")
    assert reply.status_code == 400 and field in reply.json(), reply.content
    assert not CostSettings.objects.exists()


def test_pay_per_stage_is_stored_for_the_ledger(organizer, dataset):
    reply = client_for(organizer).patch(
        url(dataset, "cost-settings"),
        {"currency": "eur", "rewards": {"image_verify": 0.02, "box_draw": 0.08}},
        format="json",
    )
    assert reply.status_code == 200, reply.content
    stored = CostSettings.objects.get(dataset=dataset)
    assert (stored.currency, stored.rewards) == ("EUR", {"image_verify": 0.02, "box_draw": 0.08})
