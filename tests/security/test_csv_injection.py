"""CSV downloads never carry a live spreadsheet formula (OWASP "CSV Injection"): one writer (config/csvfile.py)
neutralizes text cells that start with =, +, -, @, a tab or a carriage return, and every CSV the platform writes
goes through it."""

from __future__ import annotations

import ast
import csv
import io
from pathlib import Path

import pytest
from django.core.management import call_command

from config.csvfile import csv_text, neutralize
from crowd.models import Bundle, BundleSize, StudyLink
from crowd.providers import external_link
from tests import factories
from tests.conftest import client_for
from tests.crowd.providers.conftest import answer_bundle, session_client

REPO = Path(__file__).resolve().parents[2]
HOSTILE = ['=HYPERLINK("https://evil.example","x")', "+1+1", "-1-1", "@SUM(A1)", "\tx", "\rx"]


@pytest.mark.parametrize("cell", HOSTILE)
def test_a_cell_that_could_start_a_formula_is_written_as_text(cell):
    assert neutralize(cell) == "'" + cell
    [row] = list(csv.DictReader(io.StringIO(csv_text(["v"], [{"v": cell}]), newline="")))
    assert row["v"] == "'" + cell


def test_plain_text_and_numbers_are_written_as_they_are():
    assert [neutralize(v) for v in ("dog", "a=b", "", 3, -1.5, True, None)] == [
        "dog",
        "a=b",
        "",
        3,
        -1.5,
        True,
        None,
    ]
    assert csv_text(["n", "t"], [{"n": -4, "t": "x"}]).splitlines() == ["n,t", "-4,x"]


def test_every_csv_writer_of_the_platform_is_the_neutralizing_one():
    """No module but config/csvfile.py builds a csv.writer or csv.DictWriter of its own."""
    offenders = []
    for path in REPO.rglob("*.py"):
        relative = path.relative_to(REPO)
        if relative.parts[0] in {".venv", "tests", "bench"} or relative == Path("config/csvfile.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in {"writer", "DictWriter"}:
                if isinstance(node.value, ast.Name) and node.value.id == "csv":
                    offenders.append(f"{relative}:{node.lineno}")
    assert not offenders, f"write CSV with config.csvfile (formulas neutralized): {offenders}"


@pytest.mark.django_db
def test_study_completions_csv_neutralizes_a_participant_id_that_starts_a_formula(client, dataset, organizer):
    BundleSize.objects.create(dataset=dataset, kind="binary_vote", size=3)
    factories.TaskFactory.create_batch(3, image__dataset=dataset)
    study = StudyLink.objects.create(dataset=dataset, kind="binary_vote", participant_param="PID")
    page = client.get(f"/study/{study.key}/", {"PID": "-1-1"})
    token = page.content.split(b'data-session="')[1].split(b'"')[0].decode()
    answer_bundle(session_client(token), 3)
    assert Bundle.objects.filter(external_ref=f"{study.key}:-1-1").exists()
    response = client_for(organizer).get(f"/api/v1/studies/{study.pk}/completions", {"export": "csv"})
    [row] = list(csv.DictReader(io.StringIO(response.content.decode(), newline="")))
    assert row["participant"] == "'-1-1"
    assert external_link.completions_list(study)[0].participant == "-1-1"  # the JSON keeps the id as it is


@pytest.mark.django_db
def test_candidate_queries_csv_neutralizes_a_concept_named_like_a_formula(capsys):
    concept = factories.ConceptFactory(wnid="n02084071", name='=HYPERLINK("https://evil.example")')
    call_command("candidate_queries", "--concept", concept.wnid, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out, newline="")))
    assert rows and all(not row["query"].startswith(("=", "+", "-", "@")) for row in rows)
    assert rows[0]["query"].startswith("'=")
