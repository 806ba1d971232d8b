"""The Content-Security-Policy every page is served with: scripts and everything else only from our own origin
(no inline script, no eval), images also from the media bucket, no plugins, no framing. A view that must differ
in a directive or two (the MTurk page, which the provider frames and whose form posts to the provider) names only
those with `csp_relax`; the rest of the policy stays. A view that sets the whole header itself keeps it."""

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


def policy(img_sources: list[str], relaxed: dict[str, list[str]] | None = None) -> str:
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
    for name, values in (relaxed or {}).items():
        if name not in directives:
            raise ValueError(f"unknown Content-Security-Policy directive {name!r}")
        directives[name] = list(values)
    return "; ".join(f"{name} {' '.join(values)}" for name, values in directives.items())


RELAXED = "csp_relaxed"  # the response attribute `csp_relax` sets


def csp_relax(response, **directives: list[str]):
    """Replace only the named directives of the site policy on this response (`frame_ancestors=[...]` for
    `frame-ancestors`); every other directive (script-src above all) stays as the site sets it."""
    relaxed = dict(getattr(response, RELAXED, ()))
    relaxed.update({name.replace("_", "-"): list(values) for name, values in directives.items()})
    setattr(response, RELAXED, relaxed)
    return response


@lru_cache(maxsize=32)
def _header(img_sources: tuple[str, ...], relaxed: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> str:
    return policy(list(img_sources), {name: list(values) for name, values in relaxed})


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if HEADER not in response.headers:
            # Read per response (built once per value): a process started before the setting changed, such as
            # a test's live server, serves the current policy.
            relaxed = tuple(sorted((k, tuple(v)) for k, v in getattr(response, RELAXED, {}).items()))
            response.headers[HEADER] = _header(tuple(settings.CROWDLABEL["CSP_IMG_SOURCES"]), relaxed)
        return response
