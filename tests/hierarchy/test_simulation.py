"""A seeded simulated crowd labels generated scenes through the HTTP API only (`simulate --scenario multilabel`):
Algorithm 1 with the yes-biased question vote keeps leaf labels accurate and finds the present classes."""

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
    summary = run_simulate(
        hierarchy="fixtures/hierarchies/voc20.json",
        images=int(__import__("os").environ.get("SIM_IMAGES", 60)),
        workers=20,
        seed=1,
    )
    print(json.dumps(summary))
    assert summary["images_done"] == 60
    assert summary["submit_errors"] == 0
    assert summary["leaf_accuracy"] >= 0.99
    assert summary["recall"] >= 0.98
    assert summary["questions_per_image"] < summary["flat_questions_per_image"]
    assert summary["votes_per_image"] >= summary["questions_per_image"]
    assert summary["tasks_by_kind"] == {"hierarchy_question": summary["tasks_answered"]}
