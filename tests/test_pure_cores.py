"""The lint rule behind convention 1: algorithm modules never import Django or DRF."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PURE_CORES = [
    "annotation/geometry.py",
    "annotation/pipeline.py",
    "annotation/pipeline_events.py",
    "annotation/imagecheck.py",
    "annotation/final_evidence.py",
    "annotation/queue/contract.py",
    "consensus/calibration.py",
    "consensus/stopping.py",
    "consensus/reliability.py",
    "consensus/standing.py",
    "consensus/evidence_table.py",
    "hierarchy/algorithm.py",
    "hierarchy/fixture.py",
    "multilabel/cooccurrence.py",
    "multilabel/model_scores.py",
    "multilabel/risk_budget.py",
    "review/overlaps.py",
    "benchmark/splits.py",
    "benchmark/class_selection.py",
    "benchmark/read_ahead.py",
    "benchmark/dataset_stats.py",
    "benchmark/completeness.py",
    "benchmark/metrics",
    "benchmark/exporters",
    "simulator/scenes.py",
    "simulator/simulated.py",
    "simulator/ground_truth.py",
    "simulator/export_score.py",
    "simulator/reviewer.py",
    "gold/scoring.py",
    "gold/sprt.py",
    "simulator/gold_simulation.py",
    "organize/eta.py",
    "organize/ledger.py",
    "config/layers.py",
    "organize/quality_stats.py",
    "hierarchy/queries.py",
    "candidates/addresses.py",
    "organize/crowd_fit.py",
    "predictions/rows.py",
    "predictions/thresholds.py",
    "simulator/detector.py",
    "predictions/score_prior.py",
]
FORBIDDEN = ("django", "rest_framework", "drf_spectacular", "celery")


def pure_files() -> list[Path]:
    files: list[Path] = []
    for name in PURE_CORES:
        path = ROOT / name
        if path.is_dir():
            files.extend(sorted(path.rglob("*.py")))
        elif path.exists():
            files.append(path)
    return files


def framework_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        else:
            continue
        found.extend(
            f"{path.relative_to(ROOT)}:{node.lineno} imports {n}"
            for n in names
            if n.split(".")[0] in FORBIDDEN
        )
    return found


def test_the_pure_core_list_finds_modules():
    assert len(pure_files()) >= 4


@pytest.mark.parametrize("path", pure_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pure_core_module_does_not_import_the_framework(path):
    assert framework_imports(path) == []


def test_the_check_catches_a_framework_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy\nfrom django.db import models\n")
    original_root = globals()["ROOT"]
    try:
        globals()["ROOT"] = tmp_path
        assert framework_imports(bad) == ["bad.py:2 imports django.db"]
    finally:
        globals()["ROOT"] = original_root


def ruff_pure_core_patterns() -> list[str]:
    """The files pyproject.toml's ruff config bans the framework in: the one negated per-file-ignores pattern."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    ignores = config["tool"]["ruff"]["lint"]["per-file-ignores"]
    (pattern,) = [key for key, rules in ignores.items() if key.startswith("!") and "TID251" in rules]
    return pattern.removeprefix("!{").removesuffix("}").split(",")


def test_the_lint_rule_bans_the_framework_in_exactly_the_pure_cores():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    banned = config["tool"]["ruff"]["lint"]["flake8-tidy-imports"]["banned-api"]
    assert set(banned) == set(FORBIDDEN)
    expected = [name if name.endswith(".py") else f"{name}/**" for name in PURE_CORES]
    assert sorted(ruff_pure_core_patterns()) == sorted(expected)


def test_mypy_checks_every_pure_core():
    makefile = (ROOT / "Makefile").read_text()
    assert "MYPY_PATHS := " + " ".join(PURE_CORES) in makefile
