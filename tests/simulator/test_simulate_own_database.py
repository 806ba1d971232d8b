"""`simulate --server URL --organizer-token TOKEN` against a server with its own database: the simulator runs
in a process whose database does not exist, so every account, the hierarchy, the dataset and the crowd's work
reach the server through its API (invitations, hierarchy upload, pipelines), and the summary is computed from
what the server answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

from annotation.models import Dataset
from consensus.models import Vote
from crowd.models import Invitation
from tests import factories

ROOT = Path(__file__).resolve().parents[2]


def simulate_elsewhere(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        # A database that cannot exist: any query the simulator made itself would fail the run.
        "DATABASE_URL": f"sqlite:///{tmp_path}/missing/dir/none.sqlite3",
        "CROWDLABEL_MEDIA_ROOT": str(tmp_path / "media"),
    }
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "simulate", "--no-progress", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.django_db(transaction=True)
def test_simulate_sets_up_and_runs_through_the_api_of_a_server_with_its_own_database(live_server, tmp_path):
    organizer = factories.user_with_roles("remote-organizer", ("organizers",))
    token = Token.objects.create(user=organizer).key
    run = simulate_elsewhere(
        tmp_path,
        "--server", live_server.url, "--organizer-token", token,
        "--scenario", "verify", "--images", "24", "--workers", "6", "--synsets", "5", "--seed", "3",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads(run.stdout)
    assert summary["tasks_answered"] > 0 and summary["submit_errors"] == 0, summary
    accepted = Invitation.objects.filter(dataset__organizers=organizer, accepted_by__isnull=False)
    assert sorted(accepted.values_list("role", flat=True)) == ["reviewers"] + ["workers"] * 6
    names = set(Dataset.objects.filter(organizers=organizer).values_list("name", flat=True))
    assert any(n.endswith("-accounts") for n in names)
    (run_dataset,) = [n for n in names if n.startswith("sim-verify-3-")]
    # The crowd's answers are the server's votes, cast by the invited accounts.
    votes = Vote.objects.filter(question__dataset__name=run_dataset)
    assert votes.count() == summary["tasks_answered"]
    invited = set(accepted.values_list("accepted_by__worker", flat=True))
    assert set(votes.values_list("worker", flat=True)) <= invited


def test_an_organizer_token_needs_a_server(tmp_path):
    run = simulate_elsewhere(tmp_path, "--organizer-token", "x", "--images", "2")
    assert run.returncode != 0 and "--organizer-token needs --server" in run.stderr


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_full_scenario_runs_against_a_server_with_its_own_database(live_server, tmp_path):
    """Issue 34: `simulate --scenario full --server ... --organizer-token ...` died with a TypeError (the
    scenario was built without its hierarchy file) after creating the accounts' dataset."""
    organizer = factories.user_with_roles("remote-organizer", ("organizers",))
    token = Token.objects.create(user=organizer).key
    run = simulate_elsewhere(
        tmp_path,
        "--server", live_server.url, "--organizer-token", token,
        "--scenario", "full", "--images", "3", "--workers", "6", "--synsets", "4", "--seed", "2",
        "--image-size", "96x72", "--gold-rate", "0", "--crowd", "clean",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads(run.stdout)
    assert summary["submit_errors"] == 0, summary
    answers = summary["answers_by_kind"]
    assert answers["verify"] > 0 and answers["hierarchy"] > 0, answers
    (run_dataset,) = Dataset.objects.filter(organizers=organizer, name__startswith="sim-full-2-")
    # The crowd's answers are the server's votes; the export was made and scored.
    assert Vote.objects.filter(question__dataset=run_dataset).exists()
    assert summary["categories_missing"] == 0 and summary["verification_labelled"] is not None


@pytest.mark.django_db(transaction=True)
def test_the_operators_scan_waits_for_no_debounce_only_for_the_boxes_to_be_checked():
    """Issue 31: the server operator's scan before the last review round waited out the scan debounce (30 s
    after the previous scan), and the export came 30 s after the last answer. Its request now runs at once
    and it returns when the server reports no accepted box unchecked."""
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Box, BoxState
    from review.models import ReviewItem, ScanState
    from simulator.operators import FULL_SPLITS
    from simulator.server_setup import ApiOperator
    from simulator.transport import InProcessTransport

    organizer = factories.user_with_roles("scan-organizer", ("organizers",))
    dataset = factories.DatasetFactory()
    dataset.organizers.add(organizer)
    image = factories.ImageFactory(dataset=dataset, width=200, height=200)
    dog = factories.ConceptFactory()
    for dx in (0, 1):  # accepted around the services: not checked on commit
        Box.objects.create(
            image=image, concept=dog, x1=10 + dx, y1=10, x2=100 + dx, y2=100, state=BoxState.ACCEPTED
        )
    ScanState.objects.create(dataset=dataset, last_finished_at=timezone.now() - timedelta(seconds=1))
    operator = ApiOperator(
        InProcessTransport(), Token.objects.create(user=organizer).key, FULL_SPLITS, scan_wait=5
    )

    operator.scan_overlaps(dataset.name)

    review = InProcessTransport().call("GET", f"/api/v1/datasets/{dataset.pk}/review", token=operator.token)
    assert review.data["unchecked_boxes"] == 0
    assert ReviewItem.objects.filter(dataset=dataset, kind="duplicate", state="open").count() == 1
