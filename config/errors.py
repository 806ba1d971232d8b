"""The API's error answers: page-not-found as JSON under /api/ (what the OpenAPI schema documents for every
operation, even for a path the URL map cannot match, such as a non-numeric id), Django's own page elsewhere; and
the one 409 every app's views raise (`Conflict`)."""

from __future__ import annotations

from django.http import JsonResponse
from django.views import defaults
from rest_framework import status
from rest_framework.exceptions import APIException


class Conflict(APIException):
    """409: the request conflicts with the object's current state (DRF's own handler answers it: a string detail
    as `{"detail": ...}`, a dict as it is). Raised by views from their services' errors, with a message a person
    can act on."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the object's current state."
    default_code = "conflict"


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "No such API path or object."}, status=404)
    return defaults.page_not_found(request, exception)
