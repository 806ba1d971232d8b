"""Every scenario runs as a deployment runs (`simulator.scenarios.finishing`): after the crowd runs dry the sweep
settles what nobody left can answer and a simulated in-house reviewer decides every review item, so a run ends
with nothing unfinished and its summary counts what was left to a person; `--crowd-only` stops when the crowd
runs dry, and what it leaves is reported apart instead of as misses."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from consensus.models import ConsensusSettings, Question, QuestionState
from review.models import ItemState, ReviewItem

# transaction=True: calibration tables, box jobs and review items are built on commit, as in production.
pytestmark = pytest.mark.django_db(transaction=True)


def run_simulate(**options) -> dict:
    out = io.StringIO()
    call_command("simulate", stdout=out, no_progress=True, **options)
    return json.loads(out.getvalue())


def open_review_items() -> int:
    return ReviewItem.objects.filter(state__in=[ItemState.OPEN, ItemState.LEASED]).count()


def test_a_verify_run_with_too_few_workers_for_the_cap_ends_decided_with_the_reviewer_s_share_counted():
    # Six workers cannot give most questions a confident count: the crowd alone leaves them undecided.
    alone = run_simulate(scenario="verify", images=24, workers=6, seed=3, synsets=3, crowd_only=True)
    assert alone["unfinished"] > 0
    assert alone["reviewer"]["decided"] == 0

    finished = run_simulate(scenario="verify", images=24, workers=6, seed=3, synsets=3)
    assert finished["unfinished"] == 0
    assert finished["reviewer"]["decided"] > 0
    # What went to a person is the reviewer's decisions on verification questions (none is left waiting).
    assert finished["review"] == finished["reviewer"]["by_asks"]["image_verify"]
    assert finished["review_per_100_questions"] == round(100 * finished["review"] / 24, 2)
    assert finished["precision"] >= 0.9
    assert not Question.objects.filter(state=QuestionState.REVIEW).exists()
    assert open_review_items() == 0


def test_a_multilabel_run_finishes_every_image_and_counts_review_per_100_images():
    summary = run_simulate(
        scenario="multilabel",
        images=6,
        workers=6,
        seed=2,
        image_size="64x48",
        hierarchy="fixtures/hierarchies/voc20.json",
        extension_cap=16,  # more votes than six workers can give: the sweep settles what they cannot
    )
    assert summary["images_unfinished"] == 0
    assert summary["images_done"] == 6
    assert ConsensusSettings.objects.get(dataset__name__startswith="sim-multilabel-2-").extension_cap == 16
    decided = summary["reviewer"]["decided"]
    assert summary["review_per_100_images"] == round(100 * decided / 6, 2)
    assert open_review_items() == 0
    assert not Question.objects.filter(state__in=[QuestionState.OPEN, QuestionState.REVIEW]).exists()


def test_a_boxes_run_finishes_every_job():
    summary = run_simulate(scenario="boxes", images=6, workers=6, seed=5, synsets=3)
    assert summary["jobs_unfinished"] == 0
    assert summary["jobs"]["done"] == sum(summary["jobs"].values())
    assert open_review_items() == 0
