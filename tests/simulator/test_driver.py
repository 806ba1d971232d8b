"""The simulator drives the platform only through its HTTP API, and a seeded run is reproducible."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

ROOT = Path(__file__).resolve().parents[2]
DRIVER_MODULES = [
    "simulator/driver.py",
    "simulator/transport.py",
    "simulator/provider_flows.py",
    "simulator/server_setup.py",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "simulator/scenarios").glob("*.py")),
]
PLATFORM_PACKAGES = {"annotation", "hierarchy", "consensus", "gold", "review", "benchmark", "crowd"}


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", DRIVER_MODULES)
def test_driver_never_imports_the_platform_models_or_services(module):
    imports = imported_modules(ROOT / module)
    platform = {name for name in imports if name.split(".")[0] in PLATFORM_PACKAGES}
    assert platform == set()
    assert not any(name.startswith("django.db") for name in imports)


def run_simulate(**options) -> dict:
    out = io.StringIO()
    call_command("simulate", stdout=out, no_progress=True, **options)
    return json.loads(out.getvalue())


@pytest.mark.django_db
def test_verify_summary_has_every_key_and_is_reproducible_for_a_seed():
    # The crowd alone: a sweep and a reviewer would settle what is left from tables and reliabilities the
    # database shares between runs, so only the crowd's part repeats exactly in one database.
    first = run_simulate(scenario="verify", images=24, workers=6, seed=3, synsets=5, crowd_only=True)
    second = run_simulate(scenario="verify", images=24, workers=6, seed=3, synsets=5, crowd_only=True)
    for key in (
        "precision",
        "recall",
        "votes_per_image",
        "questions_per_image",
        "box_coverage",
        "box_accuracy",
        "tasks_per_second",
        "worker_seconds_per_image",
    ):
        assert key in first
    assert first["box_coverage"] is None and first["box_accuracy"] is None
    assert first["votes_per_image"] > 0 and first["tasks_answered"] > 0
    assert first["submit_errors"] == 0
    wall_clock = {"tasks_per_second", "wall_seconds"}
    assert {k: v for k, v in first.items() if k not in wall_clock} == {
        k: v for k, v in second.items() if k not in wall_clock
    }


@pytest.mark.django_db
def test_a_different_seed_gives_a_different_run():
    a = run_simulate(scenario="verify", images=24, workers=6, seed=3, synsets=5)
    b = run_simulate(scenario="verify", images=24, workers=6, seed=4, synsets=5)
    assert (a["worker_seconds_per_image"], a["votes_per_image"]) != (
        b["worker_seconds_per_image"],
        b["votes_per_image"],
    )


@pytest.mark.django_db
def test_report_writes_markdown_and_plots(tmp_path):
    run_simulate(scenario="verify", images=12, workers=4, seed=1, synsets=3, report=tmp_path / "r")
    report = (tmp_path / "r" / "report.md").read_text()
    assert "precision" in report and "quality.png" in report
    assert (tmp_path / "r" / "quality.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "options, message",
    [
        ({"images": 0}, "--images"),
        ({"workers": 1}, "--workers"),
        ({"spammers": 1.5}, "--spammers"),
        ({"concurrency": 4}, "--server"),
        ({"synsets": 999}, "--synsets"),
    ],
)
@pytest.mark.django_db
def test_bad_options_fail_with_a_message_naming_the_option(options, message):
    with pytest.raises(CommandError, match=message):
        run_simulate(scenario="verify", **options)
