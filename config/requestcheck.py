"""Middleware refusing malformed requests before any view or database sees them: a NUL character or lone
surrogate in the path is a 404 (no such page can exist), in the query string a 400 naming the parameter; a
non-multipart body declared larger than DATA_UPLOAD_MAX_MEMORY_SIZE is a 413 (Django would raise on reading
it, and DRF reads every JSON body whole)."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, JsonResponse

from config.textcheck import BadText, check_strings, text_problem


def body_limit() -> int | None:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


class RequestCheckMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if text_problem(request.path_info) is not None:
            raise Http404("No such page.")
        try:
            check_strings((key, value) for key, values in request.GET.lists() for value in values)
        except BadText as exc:
            return JsonResponse({"detail": f"query string: {exc}"}, status=400)
        limit = body_limit()
        declared = request.META.get("CONTENT_LENGTH") or "0"
        if (
            limit is not None
            and not request.content_type.startswith("multipart/")
            and declared.isascii()
            and declared.isdigit()
            and int(declared) > limit
        ):
            return JsonResponse(
                {"detail": f"request body of {declared} bytes; the most accepted is {limit}"}, status=413
            )
        return self.get_response(request)
