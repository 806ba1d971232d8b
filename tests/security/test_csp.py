"""Every page carries a Content-Security-Policy without inline script; a view's own policy is kept; no template
of ours holds an inline script (the policy would block it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from config.csp import HEADER, ContentSecurityPolicyMiddleware, csp_relax, media_origins, policy
from tests import factories

REPO = Path(__file__).resolve().parents[2]


def directives(header: str) -> dict[str, list[str]]:
    parts = (item.strip().split() for item in header.split(";") if item.strip())
    return {name: values for name, *values in parts}


@pytest.mark.parametrize(
    "path",
    ["/", "/accounts/login/", "/worker/", "/review/", "/api/docs/", "/admin/login/", "/healthz", "/nope/"],
)
def test_every_page_and_response_sends_a_policy_without_inline_script(client, db, path):
    user = factories.user_with_roles("w", ("workers", "reviewers"))
    client.force_login(user)
    response = client.get(path)
    policy_header = response.headers[HEADER]
    found = directives(policy_header)
    assert found["default-src"] == ["'self'"]
    assert found["script-src"] == ["'self'"]
    assert found["object-src"] == ["'none'"]
    assert found["frame-ancestors"] == ["'none'"]
    assert "'unsafe-inline'" not in found["script-src"] and "'unsafe-eval'" not in found["script-src"]


def test_api_responses_carry_the_policy_too(client, db):
    assert HEADER in client.get("/api/v1/datasets/").headers


def test_a_view_that_sets_its_own_policy_keeps_it():
    own = "frame-ancestors https://workersandbox.mturk.com"

    def view(request):
        response = HttpResponse("ok")
        response.headers[HEADER] = own
        return response

    response = ContentSecurityPolicyMiddleware(view)(RequestFactory().get("/mturk/"))
    assert response.headers[HEADER] == own


def test_a_view_may_relax_named_directives_and_keeps_the_rest_of_the_policy():
    def view(request):
        return csp_relax(HttpResponse("ok"), frame_ancestors=["https://worker.mturk.com"])

    found = directives(ContentSecurityPolicyMiddleware(view)(RequestFactory().get("/mturk/")).headers[HEADER])
    assert found["frame-ancestors"] == ["https://worker.mturk.com"]
    assert found["script-src"] == ["'self'"] and found["default-src"] == ["'self'"]
    with pytest.raises(ValueError, match="unknown"):
        policy([], {"frame-src": ["https://example.org"]})


def test_images_may_come_from_the_media_bucket_only_when_one_is_configured():
    assert media_origins("", None, None) == []
    assert media_origins("pics", "eu-west-1", None) == [
        "https://pics.s3.amazonaws.com",
        "https://pics.s3.eu-west-1.amazonaws.com",
    ]
    assert media_origins("pics", None, "http://minio.local:9000/") == ["http://minio.local:9000"]
    assert "img-src 'self' data: blob: https://cdn.example" in policy(["https://cdn.example"])


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
INLINE_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.IGNORECASE)


def test_no_template_of_ours_holds_an_inline_script_or_handler():
    templates = [p for p in REPO.glob("*/templates/**/*.html")]
    assert templates, "the templates moved: point this test at them"
    offenders = [
        str(p.relative_to(REPO))
        for p in templates
        if INLINE_SCRIPT.search(p.read_text()) or INLINE_HANDLER.search(p.read_text())
    ]
    assert offenders == []


def test_the_api_docs_page_loads_its_script_from_a_file(client, db):
    body = client.get("/api/docs/").content.decode()
    assert "<script" in body
    assert not INLINE_SCRIPT.search(body)
