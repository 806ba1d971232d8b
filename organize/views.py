"""Server-rendered shells of the organizer workspace (/organize/) and the invitation-accept page. The pages'
dynamic parts call the same REST API as any client."""

from __future__ import annotations

import functools

from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.db.models.functions import Coalesce
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_http_methods

from config.roles import ORGANIZERS, REVIEWERS, has_role
from crowd import invitations

from .scoping import organizer_dataset, organizer_datasets


def organizer_page(view):
    """Signed in (else the login page), and an organizer (else a 403 page saying so)."""

    @functools.wraps(view)
    @login_required
    @ensure_csrf_cookie
    def wrapped(request, *args, **kwargs):
        if not has_role(request.user, ORGANIZERS):
            return render(request, "organize/forbidden.html", status=403)
        return view(request, *args, **kwargs)

    return wrapped


@require_GET
@organizer_page
def datasets(request):
    rows = organizer_datasets(request.user).annotate(image_count=Coalesce("tally__images", 0)).order_by("-id")
    context = {
        "datasets": rows.filter(archived_at__isnull=True),
        "archived": rows.filter(archived_at__isnull=False).order_by("-archived_at"),
    }
    return render(request, "organize/datasets.html", context)


def dataset_page(tab: str, template: str = "", **extra):
    """A page of one of the organizer's datasets: `organize/{template or tab}.html` with the dataset, its tab
    and the ids of the URL (an image's, a worker's: the page's API call checks them)."""

    @require_GET
    @organizer_page
    def view(request, dataset_id: int, **ids):
        dataset = organizer_dataset(request.user, dataset_id)
        context = {"dataset": dataset, "tab": tab, **ids, **{k: v() for k, v in extra.items()}}
        return render(request, f"organize/{template or tab}.html", context)

    view.__name__ = f"dataset_{template or tab}"
    return view


def _formats() -> list[str]:
    from benchmark.exporters import FORMATS

    return sorted(FORMATS)


dataset_home = dataset_page("dataset")
dataset_images = dataset_page("images")
dataset_classes = dataset_page("classes")
dataset_candidates = dataset_page("candidates")
dataset_predictions = dataset_page("predictions")


def _task_kinds() -> list[dict[str, str]]:
    from annotation import kinds

    return [{"name": name, "title": kinds.get(name).title} for name in kinds.names()]


dataset_crowds = dataset_page("crowds", task_kinds=_task_kinds)


def _protocols() -> list[str]:
    from benchmark.metrics import PROTOCOLS

    return sorted(PROTOCOLS)


dataset_benchmark = dataset_page("benchmark", formats=_formats, protocols=_protocols)
dataset_people = dataset_page("people")
dataset_quality = dataset_page("quality")
dataset_settings = dataset_page("settings", task_kinds=_task_kinds)
dataset_image = dataset_page("images", template="image")


@require_GET
@organizer_page
def dataset_statistics(request, dataset_id: int):
    """The statistics report of `manage.py dataset_stats`, rendered here with its plots as SVG (no script);
    `?split_version=N&detection_set=NAME` pick what it describes (a 400 page names an unknown one). The report
    is computed in the background (benchmark/reports.py): the page shows the newest one with its time, or,
    before the first, says so and reloads itself every few seconds."""
    from benchmark import reports
    from benchmark.models import ReportKind

    from .statistics import report_plots

    dataset = organizer_dataset(request.user, dataset_id)
    context = {"dataset": dataset, "tab": "statistics", "scale_bins": reports.scale_bin_names()}
    try:
        version, detection_set = reports.choices(
            dataset, request.GET.get("split_version"), request.GET.get("detection_set")
        )
    except reports.StatisticsChoiceError as exc:
        context["error"] = str(exc)
        return render(request, "organize/statistics.html", context, status=400)
    params = reports.statistics_params(dataset, version, detection_set)
    current = reports.report_current(dataset, ReportKind.DATASET_STATISTICS, params, request.user)
    context.update(
        current=current,
        params=params,
        max_age_minutes=round(reports.max_age().total_seconds() / 60),
        **reports.picker_choices(dataset),
    )
    if current.done is not None:
        context.update(report=current.done.body, plots=report_plots(current.done.body))
    return render(request, "organize/statistics.html", context)


dataset_worker = dataset_page("people", template="worker")


@never_cache
@require_http_methods(["GET", "POST"])
def invitation_accept(request, token: str):
    """The invitee picks a username and password; the account is created with the invitation's role, signed
    in, and shown its API token once."""
    from .people_api import AcceptSerializer

    try:
        invitation = invitations.invitation_check(token)
    except invitations.InvitationInvalid as exc:
        return render(request, "organize/invite.html", {"invalid": str(exc)}, status=404)
    context = {"invitation": invitation, "errors": {}}
    if request.method == "POST":
        form = AcceptSerializer(data={**request.POST.dict(), "token": token})
        if form.is_valid():
            try:
                accepted = invitations.invitation_accept(
                    token=token,
                    username=form.validated_data["username"],
                    password=form.validated_data["password"],
                )
            except invitations.InvitationInvalid as exc:
                return render(request, "organize/invite.html", {"invalid": str(exc)}, status=404)
            except invitations.UsernameTaken as exc:
                context["errors"] = {"username": [str(exc)]}
            else:
                # No backend named: Django records the one configured backend in the session, which the next
                # request's AuthenticationMiddleware accepts (a path outside AUTHENTICATION_BACKENDS signs out).
                login(request, accepted.user)
                next_url = "/review/" if has_role(accepted.user, REVIEWERS) else "/worker/"
                return render(
                    request,
                    "organize/invite_done.html",
                    {"accepted": accepted, "next_url": next_url},
                    status=201,
                )
        else:
            context["errors"] = form.errors
        context["username"] = request.POST.get("username", "")
    response = render(request, "organize/invite.html", context, status=400 if context["errors"] else 200)
    return response
