"""Entry pages of provider sessions: a study link's landing page and MTurk's ExternalQuestion page. Each
checks who arrives, opens the bundle and renders the bundle page, which then speaks only the bundle API."""

from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotation import kinds
from config.csp import csp_relax

from .models import MturkHit, StudyLink
from .providers import base, external_link, mturk


def bundle_page(request, *, bundle=None, title: str, error: str = "", preview: bool = False, **extra):
    context = {
        "title": title,
        "error": error,
        "preview": preview,
        "session": base.session_token(bundle) if bundle is not None else "",
        "size": bundle.size if bundle is not None else extra.pop("size", 0),
        **extra,
    }
    return render(request, "frontend/bundle.html", context, status=400 if error else 200)


@require_GET
def study(request, key: str):
    """`/study/<key>/?<participant param>=ID`: the participant's bundle in this study."""
    link = get_object_or_404(StudyLink.objects.select_related("dataset"), key=key)
    title = kinds.get(link.kind).title
    try:
        bundle = external_link.study_session_start(
            study=link, participant=request.GET.get(link.participant_param, "")
        )
    except (ValidationError, base.SessionInvalid) as exc:
        message = exc.messages[0] if isinstance(exc, ValidationError) else str(exc)
        return bundle_page(request, title=title, error=message)
    return bundle_page(request, bundle=bundle, title=title)


MTURK_ID = re.compile(r"^[A-Z0-9]{1,64}$")


def _framable_by_mturk(response):
    """Only MTurk's own hosts may frame the task page, and its form may post to MTurk's submit hosts (and follow
    their redirect to MTurk's worker site); the rest of the site's policy (script-src above all) stays. Every
    other page keeps X-Frame-Options DENY and frame-ancestors 'none'."""
    conf = settings.CROWDLABEL
    ancestors = list(conf["MTURK_FRAME_ANCESTORS"]) or ["'none'"]
    mturk_hosts = dict.fromkeys([*conf["MTURK_SUBMIT_HOSTS"], *conf["MTURK_FRAME_ANCESTORS"]])
    csp_relax(response, frame_ancestors=ancestors, form_action=["'self'", *mturk_hosts])
    response.xframe_options_exempt = True
    return response


@require_GET
def mturk_task(request):
    """MTurk's ExternalQuestion page. Preview (`ASSIGNMENT_ID_NOT_AVAILABLE`): instructions and a sample, no
    lease. Accepted: MTurk confirms the assignment before any id is trusted, then the worker answers the
    bundle and the page posts to the allow-listed externalSubmit URL."""
    params = request.GET
    hit = (
        MturkHit.objects.select_related("hit_type")
        .filter(hit_id=params.get("hitId", ""), state__in=mturk.WORKABLE_HITS)
        .first()
    )
    if hit is None:
        return _framable_by_mturk(
            bundle_page(request, title="Crowdlabel", error="This HIT is not one of ours.")
        )
    hit_type = hit.hit_type
    assignment_id = params.get("assignmentId", "")
    if assignment_id == mturk.PREVIEW_ASSIGNMENT:
        response = bundle_page(
            request,
            title=hit_type.title,
            preview=True,
            instructions=hit_type.description,
            sample=kinds.get(hit_type.kind).title,
            size=base.bundle_size_for(hit_type.dataset_id, hit_type.kind),
        )
        return _framable_by_mturk(response)
    worker_id = params.get("workerId", "")
    if not (MTURK_ID.match(assignment_id) and MTURK_ID.match(worker_id)):
        error = "The link is missing a valid assignmentId or workerId; open the HIT from Mechanical Turk."
        return _framable_by_mturk(bundle_page(request, title=hit_type.title, error=error))
    try:
        arrival = mturk.arrival_confirm(
            mturk.client(),
            assignment_id=assignment_id,
            hit_id=hit.hit_id,
            worker_id=worker_id,
            turk_submit_to=params.get("turkSubmitTo", ""),
        )
        bundle = mturk.session_start(arrival)
    except (mturk.MturkError, base.SessionInvalid) as exc:
        return _framable_by_mturk(bundle_page(request, title=hit_type.title, error=str(exc)))
    return _framable_by_mturk(bundle_page(request, bundle=bundle, title=hit_type.title))
