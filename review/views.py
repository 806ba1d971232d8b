"""The reviewer page: a server-rendered shell; items and decisions go through the review API."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from annotation.models import ReviewerGrant
from config.roles import REVIEWERS, has_role


@require_GET
@login_required
@ensure_csrf_cookie
def review_page(request):
    # A scoped reviewer is told which datasets they review; an unscoped one that they review every dataset.
    scope = list(
        ReviewerGrant.objects.filter(user=request.user)
        .order_by("dataset_id")
        .values_list("dataset__name", flat=True)
    )
    return render(
        request,
        "frontend/review.html",
        {
            "is_reviewer": has_role(request.user, REVIEWERS),
            "dataset": request.GET.get("dataset", ""),
            "scope": scope,
        },
    )
