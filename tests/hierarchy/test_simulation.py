"""A seeded simulated crowd labels generated scenes through the HTTP API only (`simulate --scenario multilabel`):
Algorithm 1 with the yes-biased question vote keeps leaf labels accurate and finds the present classes.

Sized to run in about a minute on a shared 2-core machine (each task is a lease and a submit through the full
API stack); docs/hierarchy.md quotes larger runs."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command


def run_simulate(**options) -> dict:
    out = io.StringIO()
    call_command("simulate", scenario="multilabel", stdout=out, no_progress=True, **options)
    return json.loads(out.getvalue())


@pytest.mark.django_db
def test_multilabel_simulation_over_voc20_is_accurate_and_cheaper_than_flat_questions():
    summary = run_simulate(hierarchy="fixtures/hierarchies/voc20.json", images=25, workers=15, seed=1)
    assert summary["images_done"] == summary["images"] == 25
    assert summary["submit_errors"] == 0
    assert summary["leaf_accuracy"] >= 0.99
    assert summary["recall"] >= 0.98
    assert summary["precision"] >= 0.9
    assert summary["questions_per_image"] < summary["flat_questions_per_image"]
    assert summary["votes_per_image"] >= 2 * summary["questions_per_image"]  # every decision takes >= 2 votes
    assert summary["tasks_by_kind"] == {"hierarchy_question": summary["tasks_answered"]}
