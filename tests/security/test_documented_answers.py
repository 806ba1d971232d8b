"""What the API sends is what its schema documents (issue 18, schemathesis's findings turned into tests): every
operation lists the common error answers, a path under /api/ the URL map cannot match is a JSON 404, a `page`
that is not a number is a 400, and bodies carry every field their schema marks required."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

from annotation.audit import audit_record
from tests.conftest import client_for


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def test_every_operation_documents_the_common_error_answers(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            codes = set(operation["responses"])
            assert {"400", "403", "404", "429"} <= codes, (method, path, codes)
            if operation.get("security") not in (None, [{}]):
                assert "401" in codes, (method, path)
            if method in ("post", "put", "patch"):
                assert {"409", "413", "415"} <= codes, (method, path, codes)
    assert schema["components"]["schemas"]["Error"]["required"] == ["detail"]


def test_an_own_error_body_stays_documented_beside_the_common_one(schema):
    upload = schema["paths"]["/api/v1/datasets/{id}/images/"]["post"]["responses"]["400"]
    shapes = upload["content"]["application/json"]["schema"]["anyOf"]
    assert {"$ref": "#/components/schemas/ValidationError"} in shapes
    assert {"$ref": "#/components/schemas/IngestReport"} in shapes


@pytest.mark.parametrize("path", ["/api/v1/datasets/not-a-number/", "/api/v1/no-such-thing/"])
def test_an_api_path_the_url_map_cannot_match_is_a_json_404(organizer, path):
    response = client_for(organizer).get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["detail"]


def test_a_page_outside_the_api_keeps_djangos_own_404(client, db):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert not response["Content-Type"].startswith("application/json")


@pytest.mark.parametrize("page", ["", "x", "1.5", "²"])
def test_a_page_that_is_not_a_number_is_a_400(organizer, dataset, page):
    response = client_for(organizer).get("/api/v1/datasets/", {"page": page})
    assert response.status_code == 400
    assert "page" in response.json()


def test_page_numbers_and_last_still_page(organizer, dataset):
    client = client_for(organizer)
    assert client.get("/api/v1/datasets/", {"page": "1"}).status_code == 200
    assert client.get("/api/v1/datasets/", {"page": "last"}).status_code == 200


def test_a_new_dataset_is_answered_with_its_image_count(organizer):
    response = client_for(organizer).post("/api/v1/datasets/", {"name": "fresh"}, format="json")
    assert response.status_code == 201
    assert response.json()["image_count"] == 0


def test_the_audit_trail_is_paginated_as_its_schema_says(organizer, dataset, schema):
    audit_record(dataset=dataset, actor=organizer, action="test.start", parameters={}, result={})
    body = client_for(organizer).get(f"/api/v1/datasets/{dataset.pk}/audit/").json()
    assert body["count"] == 1 and body["results"][0]["action"] == "test.start"
    documented = schema["paths"]["/api/v1/datasets/{dataset_id}/audit/"]["get"]["responses"]["200"]
    assert "Paginated" in documented["content"]["application/json"]["schema"]["$ref"]


def test_a_fresh_invitation_has_no_one_who_accepted_it_and_the_schema_allows_that(organizer, dataset, schema):
    response = client_for(organizer).post(
        f"/api/v1/datasets/{dataset.pk}/invitations/", {"role": "workers"}, format="json"
    )
    assert response.status_code == 201 and response.json()["accepted_by"] is None
    assert (
        schema["components"]["schemas"]["IssuedInvitation"]["properties"]["accepted_by"]["nullable"] is True
    )
