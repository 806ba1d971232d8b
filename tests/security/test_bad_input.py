"""Bad input never reaches a 500: bounded JSON (size, nesting), no NUL or lone surrogate in bodies, query strings
or paths, bounded numbers, choices validated before use, and a clear exit message from `load_hierarchy`."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from review.models import ReviewItem, ReviewKind
from tests import factories
from tests.conftest import client_for, png_bytes

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def client(organizer):
    return client_for(organizer)


def post_raw(client, url: str, raw: str):
    return client.post(url, data=raw.encode("utf-8", "surrogatepass"), content_type="application/json")


def test_json_nested_100000_levels_is_a_400_not_a_recursion_error(client, dataset):
    response = post_raw(client, "/api/v1/datasets/", DEEP)
    assert response.status_code == 400
    assert "nested deeper" in response.json()["detail"]


def test_json_nested_past_the_depth_limit_is_refused_even_when_python_could_parse_it(client, dataset):
    body = json.dumps({"name": "x", "description": "y", "extra": json.loads("[" * 40 + "]" * 40)})
    response = post_raw(client, "/api/v1/datasets/", body)
    assert response.status_code == 400
    assert "nested deeper than 32" in response.json()["detail"]


def test_json_body_over_the_size_limit_is_a_413(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = json.dumps({"name": "x", "description": "y" * 2000})
    response = post_raw(client, "/api/v1/datasets/", body)
    assert response.status_code == 413
    assert response.json() == {"detail": f"request body of {len(body)} bytes; the most accepted is 1000"}


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/api/v1/datasets/{d}/exports/", '{"format": "\\ud800"}'),
        ("/api/v1/datasets/{d}/gold/", '{"kind": "\\udfff", "concept": "n1", "image": 1, "answer": true}'),
        ("/api/v1/datasets/{d}/multilabel/", '{"hierarchy": 1, "order": "\\ud800x"}'),
        ("/api/v1/datasets/{d}/verification/", '{"concept": "\\ud800"}'),
        ("/api/v1/datasets/", '{"name": "ok", "\\ud800": 1}'),
    ],
)
def test_a_lone_surrogate_anywhere_in_a_json_body_is_a_400_naming_the_problem(client, dataset, url, body):
    response = post_raw(client, url.format(d=dataset.pk), body)
    assert response.status_code == 400
    assert "lone surrogate" in response.content.decode()


def test_a_nul_character_in_a_json_text_field_is_a_400(client):
    response = post_raw(client, "/api/v1/datasets/", '{"name": "a\\u0000b", "description": ""}')
    assert response.status_code == 400
    assert response.json() == {"detail": "name: contains a NUL character"}


def test_a_lone_surrogate_in_a_review_decision_is_a_400(db):
    reviewer = factories.user_with_roles("reviewer", ("reviewers",))
    image = factories.ImageFactory()
    item = ReviewItem.objects.create(
        kind=ReviewKind.AMBIGUOUS,
        dataset=image.dataset,
        image=image,
        subject={"why": "test"},
        subject_key="t",
    )
    response = post_raw(
        client_for(reviewer), f"/api/v1/review/items/{item.pk}/decide/", '{"decision": "\\ud800"}'
    )
    assert response.status_code == 400
    assert "lone surrogate" in response.json()["detail"]


def test_a_nul_character_in_a_form_field_is_a_400(client, dataset):
    # Forms reach the API only where files are uploaded (every other body is JSON).
    response = client.post(
        f"/api/v1/datasets/{dataset.pk}/images/",
        {"source": "a\x00b", "files": [io.BytesIO(png_bytes())]},
        format="multipart",
    )
    assert response.status_code == 400
    assert "NUL" in response.content.decode()


def test_a_nul_character_in_the_query_string_is_a_400_naming_the_parameter(client, dataset):
    response = client.get(f"/api/v1/datasets/{dataset.pk}/boxes/?concept=%00")
    assert response.status_code == 400
    assert response.json() == {"detail": "query string: concept: contains a NUL character"}


@pytest.mark.parametrize(
    "path", ["/api/v1/concepts/%00/", "/api/v1/concepts/%00/calibration/", "/worker/%00"]
)
def test_a_nul_character_in_the_path_is_a_404(client, path):
    assert client.get(path).status_code == 404


@pytest.mark.parametrize("value", ["²", "١", "99999999999999999999999", "-1", "1e3"])
def test_a_query_id_that_is_not_ascii_digits_in_range_is_a_400(db, value):
    worker = factories.user_with_roles("w", ("workers",))
    response = client_for(worker).get("/api/v1/tasks/next/", {"dataset": value})
    assert response.status_code == 400
    assert response.json() == {"dataset": "must be an id (a non-negative integer)"}


def test_an_empty_query_id_is_a_400_naming_the_parameter_not_any(db):
    """`?dataset=` is no id: it is refused as the schema says (an integer), not read as "any dataset"."""
    worker = factories.user_with_roles("w", ("workers",))
    response = client_for(worker).get("/api/v1/tasks/next/?dataset=&kinds=")
    assert response.status_code == 400
    assert "dataset" in response.json() and "leave the parameter out" in response.json()["dataset"]


def test_a_question_list_filter_must_name_a_real_kind_and_state(client, dataset):
    url = f"/api/v1/datasets/{dataset.pk}/decisions/"
    assert client.get(url, {"kind": "image_verify", "state": "open"}).status_code == 200
    response = client.get(url, {"kind": "bogus"})
    assert response.status_code == 400 and "kind" in response.json()
    response = client.get(url, {"state": "bogus"})
    assert response.status_code == 400 and "state" in response.json()


@pytest.mark.parametrize("priority", [2_147_483_648, -2_147_483_649, 101, -101])
def test_task_priority_outside_the_organizer_range_is_a_400(client, dataset, priority):
    factories.ConceptFactory(wnid="n02084071")
    response = client.post(
        f"/api/v1/datasets/{dataset.pk}/vote-tasks/",
        {"concept": "n02084071", "priority": priority},
        format="json",
    )
    assert response.status_code == 400
    assert "priority" in response.json()


def test_multilabel_priority_outside_the_organizer_range_is_a_400(client, dataset):
    response = client.post(
        f"/api/v1/datasets/{dataset.pk}/multilabel/", {"hierarchy": 1, "priority": 2**31}, format="json"
    )
    assert response.status_code == 400
    assert "priority" in response.json()


@pytest.mark.parametrize(
    "change",
    [{"prior_a": 1e308}, {"prior_b": 1e308}, {"prior_a": 1001}, {"qualification_size": 30000}],
)
def test_gold_settings_refuse_numbers_that_would_break_scoring(client, dataset, change):
    url = f"/api/v1/datasets/{dataset.pk}/gold-settings/"
    response = client.patch(url, change, format="json")
    assert response.status_code == 400
    assert set(response.json()) == set(change)


def test_gold_settings_keep_accepting_sensible_priors(client, dataset):
    url = f"/api/v1/datasets/{dataset.pk}/gold-settings/"
    response = client.patch(url, {"prior_a": 4.0, "prior_b": 1.0}, format="json")
    assert response.status_code == 200
    assert response.json()["prior_a"] == 4.0


def _fixture_file(tmp_path, **top):
    data = {
        "format": "crowdlabel-hierarchy/1",
        "name": "tiny",
        "version": "1",
        "nodes": [{"id": "n02084071", "name": "dog", "question": "Is there a dog?", "leaf": True}],
    }
    data.update(top)
    path = tmp_path / "h.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_load_hierarchy_with_an_over_long_version_exits_with_a_clear_message(db, tmp_path):
    path = _fixture_file(tmp_path, version="v" * 51)
    with pytest.raises(CommandError, match="'version' has 51 characters; the most allowed is 50"):
        call_command("load_hierarchy", str(path))


def test_load_hierarchy_refuses_a_lone_surrogate_in_a_name(db, tmp_path):
    path = tmp_path / "h.json"
    path.write_text(
        '{"name": "t\\ud800", "version": "1", "nodes": [{"id": "n02084071", "name": "dog", '
        '"question": "Is there a dog?", "leaf": true}]}',
        encoding="utf-8",
    )
    with pytest.raises(CommandError, match="'name' contains a NUL character or a lone surrogate"):
        call_command("load_hierarchy", str(path))
