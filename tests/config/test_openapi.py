"""The OpenAPI schema: generated without warnings, valid for openapi-spec-validator (which client generators
trust), one media type per request body, served with self-hosted docs, and the committed copy in
docs/openapi.yaml is what the code generates (regenerate it with `make schema`)."""

from __future__ import annotations

import re

import pytest
import yaml
from rest_framework.test import APIClient

from tests.config.conftest import REPO_ROOT, clean_env, run

COMMITTED = REPO_ROOT / "docs" / "openapi.yaml"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """One `manage.py spectacular --validate --fail-on-warn` run, shared by the tests below."""
    out = tmp_path_factory.mktemp("schema")
    var_dir = out / "var"
    var_dir.mkdir()
    target = out / "openapi.yaml"
    result = run(
        ["manage.py", "spectacular", "--validate", "--fail-on-warn", "--file", str(target)],
        clean_env(var_dir),
    )
    return result, target


def test_schema_generates_and_validates_without_any_warning(generated):
    result, target = generated
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr
    schema = yaml.safe_load(target.read_text())
    assert "/api/v1/tasks/next/" in schema["paths"]
    assert "/api/v1/assignments/{id}/submit/" in schema["paths"]


def test_committed_schema_is_a_valid_openapi_document():
    from openapi_spec_validator import validate

    validate(yaml.safe_load(COMMITTED.read_text()))  # raises, naming the first problem


def test_every_request_body_is_offered_in_one_media_type():
    # Client generators (openapi-python-client) fail on operations offering a body in several media types.
    # Bodies are JSON; an upload of files is multipart, and nothing else is.
    schema = yaml.safe_load(COMMITTED.read_text())
    offered = {}
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict) and "requestBody" in operation:
                offered[f"{method.upper()} {path}"] = sorted(operation["requestBody"]["content"])
    assert offered and all(len(types) == 1 for types in offered.values()), offered
    multipart = {op for op, types in offered.items() if types == ["multipart/form-data"]}
    assert multipart == {
        "POST /api/v1/challenges/{id}/submissions/",
        "POST /api/v1/datasets/{dataset_id}/candidate-imports/",
        "POST /api/v1/datasets/{dataset_id}/prediction-sets/",
        "POST /api/v1/datasets/{id}/examples/",
        "POST /api/v1/datasets/{id}/images/",
    }
    assert all(types == ["application/json"] for op, types in offered.items() if op not in multipart)


@pytest.mark.django_db
def test_a_form_body_to_a_json_operation_is_refused_as_unsupported_media(organizer):
    from tests.conftest import client_for

    response = client_for(organizer).post("/api/v1/datasets/", {"name": "forms"}, format="multipart")
    assert response.status_code == 415 and "multipart/form-data" in response.json()["detail"]


def test_path_ids_are_typed_integers(generated):
    _, target = generated
    schema = yaml.safe_load(target.read_text())
    params = schema["paths"]["/api/v1/datasets/{id}/"]["get"]["parameters"]
    assert {"name": "id", "type": "integer"} == {
        "name": params[0]["name"],
        "type": params[0]["schema"]["type"],
    }


def test_committed_schema_matches_the_code(generated):
    result, target = generated
    assert result.returncode == 0, result.stderr
    assert COMMITTED.read_text() == target.read_text(), (
        "docs/openapi.yaml is stale: run `make schema` and commit the result"
    )


@pytest.mark.django_db
def test_schema_endpoint_serves_the_schema():
    response = APIClient().get("/api/schema/")
    assert response.status_code == 200
    assert b"Crowdlabel API" in response.content


@pytest.mark.django_db
def test_docs_page_loads_its_assets_from_our_own_static_files():
    client = APIClient()
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
    scripts_and_styles = [a for a in assets if a.endswith((".js", ".css"))]
    assert scripts_and_styles, html
    assert all(a.startswith("/static/drf_spectacular_sidecar/") for a in scripts_and_styles), assets
    assert "cdn" not in html.lower()
    bundle = next(a for a in scripts_and_styles if a.endswith("swagger-ui-bundle.js"))
    assert client.get(bundle).status_code == 200
