"""A seeded simulated crowd labels generated scenes through the HTTP API only (`simulate --scenario multilabel`):
Algorithm 1 keeps leaf labels accurate and finds the present classes.

Sized to run in about a minute on a shared 2-core machine (each vote is a lease and a submit through the full API
stack). The accuracy bars are asserted with the sequential yes-biased vote (engine `vote`); the consensus engine,
whose first questions of every node are 10-vote calibration questions on a fresh dataset, is checked end to end
on a few images. docs/hierarchy.md quotes larger runs of both."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

# The consensus engine's calibration rebuild runs on commit: these tests commit for real.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def run_simulate(**options) -> dict:
    out = io.StringIO()
    call_command(
        "simulate", scenario="multilabel", stdout=out, no_progress=True, image_size="160x120", **options
    )
    return json.loads(out.getvalue())


def test_multilabel_simulation_over_voc20_is_accurate_and_cheaper_than_flat_questions():
    summary = run_simulate(
        hierarchy="fixtures/hierarchies/voc20.json", images=25, workers=15, seed=1, engine="vote"
    )
    assert summary["images_done"] == summary["images"] == 25
    assert summary["submit_errors"] == 0
    assert summary["leaf_accuracy"] >= 0.99, summary
    assert summary["recall"] >= 0.98, summary
    assert summary["precision"] >= 0.9, summary
    assert summary["questions_per_image"] < summary["flat_questions_per_image"]
    assert summary["votes_per_image"] >= 2 * summary["questions_per_image"]  # every decision takes >= 2 votes
    assert summary["tasks_by_kind"] == {"hierarchy_question": summary["tasks_answered"]}


@pytest.mark.parametrize("estimator", ["dynamic", "weighted"])
def test_multilabel_through_the_consensus_engine_leaves_no_image_in_a_dead_end(estimator):
    """Every image is done or waits on a question in review that has an open review item with its image."""
    from consensus.models import Question, QuestionState
    from multilabel.models import ImageLabeling, LabelingStatus
    from review.models import OPEN_STATES, ReviewItem

    summary = run_simulate(
        hierarchy="fixtures/hierarchies/voc20.json", images=4, workers=12, seed=2, consensus=estimator
    )
    assert summary["engine"] == f"consensus/{estimator}"
    assert summary["submit_errors"] == 0
    assert summary["tasks_by_kind"] == {"question": summary["tasks_answered"]}
    waiting = ImageLabeling.objects.exclude(status=LabelingStatus.DONE)
    assert summary["images_done"] + waiting.count() == summary["images"] == 4
    in_review = Question.objects.filter(state=QuestionState.REVIEW)
    for labeling in waiting:
        assert in_review.filter(image_id=labeling.image_id, concept__wnid=labeling.pending_node).exists()
    items = ReviewItem.objects.filter(state__in=OPEN_STATES, subject__type="consensus.question")
    assert sorted((i.subject["id"], i.image_id) for i in items) == sorted(
        in_review.values_list("pk", "image_id")
    )
