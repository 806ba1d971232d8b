"""bench/queue_scale.py at a tiny size (2,000 tasks) on PostgreSQL, so the bench cannot rot: its COPY fill makes
rows the platform's own checks accept (every answer and vote counted on its task and question, nothing pointing
at a missing row), the lease and submit cycles it times all succeed through the API, the lease and the submit
are explained statement by statement, and the organizer pages answer. Times are printed, never asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from tests.pg_admin import admin_url

REPO_ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_the_scale_bench_fills_two_thousand_tasks_and_measures_leases_submits_plans_and_pages(
    tmp_path, capsys
):
    out = tmp_path / "scale.json"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    db_name = f"{settings.DATABASES['default']['NAME']}_qscale"
    command = [
        sys.executable,
        "bench/queue_scale.py",
        "--sizes",
        "2000",
        "--cycles",
        "20",
        "--page-repeat",
        "1",
    ]
    command += ["--db-name", db_name, "--admin-url", admin_url(), "--json", str(out)]
    try:
        completed = subprocess.run(
            command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"bench/queue_scale.py did not finish in {exc.timeout:.0f} s:\n{exc.stderr or ''}")
    with capsys.disabled():
        print(completed.stdout[-3000:])
    assert completed.returncode == 0, completed.stderr[-4000:]
    summary = json.loads(out.read_text())

    (run,) = summary["runs"]
    assert run["tasks"] == 2000, run
    fill = run["fill"]
    assert fill["rows"]["annotation_task"] == fill["added_tasks"] > 1900, fill
    assert fill["rows"]["annotation_assignment"] == fill["rows"]["consensus_vote"] > 3000, fill
    assert fill["rows"]["annotation_finallabel"] > 1500, fill
    assert run["checks"] and not any(run["checks"].values()), run["checks"]
    assert run["errors"] == {} and run["queue_empty"] == 0, run
    assert run["lease"]["n"] == run["submit"]["n"] == 20, run

    plans = summary["plans"]
    for request in ("lease", "submit"):
        assert plans[request], f"no statement of the {request} was explained"
        assert not [p for p in plans[request] if "error" in p], plans[request]
    lease_reads = [read for p in plans["lease"] for read in p["reads"]]
    assert any(read.startswith("annotation_task:") for read in lease_reads), lease_reads

    pages = summary["pages"]
    assert len(pages) > 30 and all(p["p99"] > 0 for p in pages), pages
