"""The liveness probe for load balancers: answers from the process alone, never touching the database."""

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    # No database, cache or session access: a probe must stay cheap and must not fail because a
    # dependency is slow (readiness checks of dependencies belong elsewhere).
    return JsonResponse({"status": "ok"})
