"""The whole platform under a crowd, with faults (issue 32): bench/soak.py for 60 s, gunicorn (4 workers), a
Celery worker and beat on PostgreSQL and a Redis broker of its own, the simulator's hostile crowd at 32 clients
working verification, Algorithm 1, boxes and review on several datasets, while backends and gunicorn workers are
killed, the broker is stopped for 30 s and exports are requested. No task submit is answered 5xx and no request
500, every answer is counted once, no deadlock reaches the PostgreSQL log, and each dataset's export equals its
final labels. Requests without an Idempotency-Key that lose their database connection (an organizer's POST, a
review decision) are answered 503 with nothing kept: the soak prints how many; not asserted here (issue 32).
Times are printed, never asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from .conftest import REPO_ROOT
from .test_load import admin_url

pytestmark = [pytest.mark.soak, pytest.mark.slow, pytest.mark.postgres, pytest.mark.broker]


def test_a_minute_of_a_hostile_crowd_under_faults_gives_no_5xx_and_counts_every_answer_once(tmp_path, capsys):
    out = tmp_path / "soak.json"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    completed = subprocess.run(
        [sys.executable, "bench/soak.py", "--duration", "60", "--clients", "32", "--load-seconds", "0"]
        + ["--db-name", f"crowdlabel_soak_{uuid.uuid4().hex[:8]}", "--admin-url", admin_url()]
        + ["--json", str(out)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    with capsys.disabled():
        print(completed.stdout[-6000:])
    assert completed.returncode == 0, completed.stderr[-4000:]
    summary = json.loads(out.read_text())

    assert summary["backends_killed"] >= 5, "the faults must have hit live backends"
    assert summary["workers_killed"] >= 2, "and gunicorn workers"
    assert summary["broker_down_seconds"] >= 30, "the broker was stopped"
    assert [r for r in summary["runs"] if r["rc"]] == [], "no simulator run failed"
    assert summary["task_submits_5xx"] == 0, summary["answers_by_status"]
    assert "500" not in summary["responses_5xx_by_status"], summary["responses_5xx_by_status"]
    # The message carries the log's DETAIL and CONTEXT lines: the printed output's tail may not reach them.
    assert summary["deadlocks"] in (0, None), (
        f"no deadlock in the PostgreSQL log: {summary['deadlocks_first']}"
    )
    integrity = summary["integrity"]
    assert integrity["submitted"] == integrity["counted"] > 100
    assert {k: v for k, v in integrity.items() if k not in ("submitted", "counted") and v} == {}
    assert summary["exports"]["differences"] == [], "each dataset's export equals its final labels"
    # Open: what a crowd or the sweep should have settled. Items in review wait for a person by design (the
    # export leaves their images out, naming why); they are printed, not asserted.
    left = summary["leftovers"]["finished_runs"]
    still_open = {k: left[k] for k in ("questions_open", "box_jobs_open", "leases_open") if left[k]}
    assert still_open == {}, f"nothing of a finished run is left open after the sweep: {summary['sweep']}"
