"""The Content-Security-Policy every page is served with: scripts and everything else only from our own origin
(no inline script, no eval), images also from the media bucket, no plugins, no framing. A view that sets its own
policy (the MTurk page, which must be framed by the provider) keeps it."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit

from django.conf import settings

HEADER = "Content-Security-Policy"


def media_origins(bucket: str, region: str | None, endpoint_url: str | None) -> list[str]:
    """Where images redirect to when media live in S3 (or an S3-compatible endpoint)."""
    if not bucket:
        return []
    if endpoint_url:
        parts = urlsplit(endpoint_url)
        return [f"{parts.scheme}://{parts.netloc}"]
    if "." in bucket:
        # A dotted name cannot be a virtual host under HTTPS (the certificate covers one label): boto signs
        # path-style URLs on the S3 endpoint itself, which must then be allowed.
        hosts = ["https://s3.amazonaws.com"]
        if region:
            hosts.append(f"https://s3.{region}.amazonaws.com")
        return hosts
    hosts = [f"https://{bucket}.s3.amazonaws.com"]
    if region:
        hosts.append(f"https://{bucket}.s3.{region}.amazonaws.com")
    return hosts


def policy(img_sources: list[str]) -> str:
    directives = {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        # Swagger UI and the admin set style attributes; styles cannot run script.
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:", *img_sources],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
    return "; ".join(f"{name} {' '.join(values)}" for name, values in directives.items())


@lru_cache(maxsize=8)
def _header(img_sources: tuple[str, ...]) -> str:
    return policy(list(img_sources))


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if HEADER not in response.headers:
            # Read per response (built once per value): a process started before the setting changed, such as
            # a test's live server, serves the current policy.
            response.headers[HEADER] = _header(tuple(settings.CROWDLABEL["CSP_IMG_SOURCES"]))
        return response
