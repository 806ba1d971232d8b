"""Server-rendered shells for the browser pages; everything dynamic goes through the REST API."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from config.roles import ORGANIZERS, REVIEWERS, has_role


@require_GET
def home(request):
    user = request.user
    return render(
        request,
        "frontend/home.html",
        {
            "is_worker": user.is_authenticated and hasattr(user, "worker"),
            "is_organizer": has_role(user, ORGANIZERS),
            "is_reviewer": has_role(user, REVIEWERS),
        },
    )


@require_GET
@login_required
@ensure_csrf_cookie
def worker(request):
    return render(
        request,
        "frontend/worker.html",
        {
            "is_worker": hasattr(request.user, "worker"),
            "kinds": request.GET.get("kinds", ""),
            "undo_seconds": settings.CROWDLABEL["ANSWER_UNDO_SECONDS"],
        },
    )
