"""Page-not-found answers: JSON under /api/ (what the OpenAPI schema documents for every operation, even for a
path the URL map cannot match, such as a non-numeric id), Django's own page elsewhere."""

from __future__ import annotations

from django.http import JsonResponse
from django.views import defaults


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "No such API path or object."}, status=404)
    return defaults.page_not_found(request, exception)
