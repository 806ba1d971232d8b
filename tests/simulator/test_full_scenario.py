"""`simulate --scenario full`: the whole pipeline through the HTTP API, scored on the exported files."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

# transaction=True: the export job is queued on commit, as in production.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FULL_KEYS = (
    "verification_precision",
    "verification_recall",
    "votes_per_image",
    "leaf_precision",
    "leaf_recall",
    "box_coverage",
    "box_coverage_small",
    "box_precision",
    "box_tasks_per_image",
    "worker_seconds_per_image",
    "questions_waiting",
    "questions_open_without_task",
    "categories_missing",
    "review",
    "pipeline",
)


def run(**options) -> dict:
    out = io.StringIO()
    call_command(
        "simulate",
        scenario="full",
        images=5,
        workers=12,
        image_size="96x72",
        synsets=0,
        seed=4,
        stdout=out,
        no_progress=True,
        **options,
    )
    return json.loads(out.getvalue())


def test_full_scenario_runs_every_phase_and_scores_the_exported_files():
    summary = run(crowd="clean", majority="3", gold_rate=0.2)
    for key in FULL_KEYS:
        assert key in summary, key
    assert summary["crowd"] == "clean"
    assert summary["submit_errors"] == 0
    answers = summary["answers_by_kind"]
    assert answers["verify"] > 0 and answers["hierarchy"] > 0 and answers.get("box_draw", 0) > 0
    for key in ("verification_precision", "leaf_recall", "box_coverage", "box_precision"):
        assert summary[key] is None or 0.0 <= summary[key] <= 1.0
    assert summary["exported_boxes"] <= summary["answers_by_kind"]["box_draw"]
    assert summary["true_instances"] > 0
    # How soon after the last answer each export was asked for, measured from the answer's confirmation.
    for fmt in ("coco", "ilsvrc"):
        timing = summary["export_timing"][fmt]
        assert timing["seconds_after_last_answer"] >= 0 and timing["seconds_to_done"] >= 0, timing
        assert timing["last_answer"] in ("crowd", "review decision")
    assert summary["gold_images"] == 1  # a fifth of 5 images, labeled by the organizer, never scored
    assert 0.0 < summary["gold_share"] < 1.0
    assert summary["blocked_spammers"] + summary["blocked_honest"] <= 12
    majority = summary["fixed_majority"]["majority3"]
    assert majority["votes_per_image"] > 0
    assert majority["precision"] is None or 0.0 <= majority["precision"] <= 1.0


def test_compare_crowds_runs_both_crowds_on_one_seed_each_on_a_fresh_database_and_prints_the_ratio():
    from annotation.models import Dataset

    out = io.StringIO()
    call_command(
        "simulate",
        scenario="verify",
        images=8,
        workers=6,
        synsets=2,
        seed=3,
        image_size="64x64",
        compare_crowds=True,
        stdout=out,
        no_progress=True,
    )
    both = json.loads(out.getvalue())
    assert [both[name]["crowd"] for name in ("hostile", "clean")] == ["hostile", "clean"]
    assert both["hostile"]["seed"] == both["clean"]["seed"] == 3
    assert not Dataset.objects.exists(), "both crowds ran in databases of their own, not this one"
    hostile, clean = (both[n]["worker_seconds_per_image"] for n in ("hostile", "clean"))
    assert both["worker_seconds_ratio"] == round(hostile / clean, 3)


def test_a_detector_pushes_its_proposals_and_the_box_jobs_start_from_them():
    from annotation.models import Box, BoxProvenance
    from boxes.models import BoxSettings
    from predictions.models import BoxPrediction

    summary = run(crowd="clean", detector_recall=0.9, proposal_threshold=0.3)
    assert summary["detector"] == {"recall": 0.9, "proposal_threshold": 0.3}
    chosen = BoxSettings.objects.get()
    assert chosen.prediction_set is not None and chosen.proposal_threshold == 0.3
    assert BoxPrediction.objects.filter(prediction_set=chosen.prediction_set).exists()
    asked = Box.objects.filter(provenance__in=[BoxProvenance.MODEL, BoxProvenance.MODEL_VERIFIED])
    assert asked.exists()  # the jobs multi-label started began from the proposals
    assert summary["box_worker_seconds_per_image"] > 0
    assert set(summary["box_worker_seconds_by_kind"]) == {"box_draw", "box_quality", "box_coverage"}


def test_a_detector_is_refused_outside_the_full_scenario():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--detector-recall"):
        call_command("simulate", scenario="verify", detector_recall=0.6, stdout=io.StringIO())
    with pytest.raises(CommandError, match="--proposal-threshold"):
        call_command("simulate", scenario="full", proposal_threshold=1.5, stdout=io.StringIO())


def test_a_second_cap_is_refused_where_no_question_asks_on():
    from django.core.management.base import CommandError

    with pytest.raises(
        CommandError, match="--extension-cap applies to verify, multilabel and full, not boxes"
    ):
        call_command("simulate", scenario="boxes", extension_cap=20, stdout=io.StringIO())
