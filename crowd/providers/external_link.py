"""External crowds that send workers to a URL (Prolific-style study links).

The participant id in the link is only a name: the page turns it into a signed session bound to one bundle,
and the completion code handed back at the end is an HMAC over the bundle, the study and the participant, so
it cannot be forged, moved to another participant or bundle, or (once redeemed) used twice.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from urllib.parse import quote

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils.crypto import constant_time_compare, salted_hmac

from config.csvfile import csv_text
from crowd.models import Bundle, BundleState, CompletionRedemption, Provider, StudyLink, WorkerSource

from .base import Completion, CrowdProvider, bundle_open, register, worker_for_external
from .payments import bundle_decisions, bundle_recommendation

CODE_SALT = "crowd.providers.external_link.completion"
PARTICIPANT_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class CodeRefused(Exception):
    """A completion code that is forged or belongs to another participant, study or bundle."""


class CodeReplayed(CodeRefused):
    """A completion code that was redeemed already."""


def _participant(bundle: Bundle) -> str:
    return bundle.external_ref.split(":", 1)[1]


def _mac(bundle_id: int, study_key: str, participant: str) -> str:
    return salted_hmac(CODE_SALT, f"{bundle_id}:{study_key}:{participant}", algorithm="sha256").hexdigest()[
        :20
    ]


def completion_code(bundle: Bundle) -> str:
    study_key, participant = bundle.external_ref.split(":", 1)
    return f"{bundle.pk}-{_mac(bundle.pk, study_key, participant).upper()}"


class ExternalLinkProvider(CrowdProvider):
    name = Provider.EXTERNAL
    title = "External study link"

    def completion(self, bundle: Bundle) -> Completion:
        code = completion_code(bundle)
        study = StudyLink.objects.get(key=bundle.external_ref.split(":", 1)[0])
        redirect = (
            study.completion_redirect.replace("{code}", quote(code)) if study.completion_redirect else ""
        )
        return Completion(code=code, redirect=redirect)

    def scope(self, bundle: Bundle) -> tuple[int, ...]:
        """The study link's datasets (its own dataset when it names none)."""
        named = StudyLink.datasets.through.objects.filter(studylink__key=bundle.external_ref.split(":", 1)[0])
        return tuple(sorted(named.values_list("dataset_id", flat=True))) or (bundle.dataset_id,)


provider = register(ExternalLinkProvider())


def study_session_start(*, study: StudyLink, participant: str) -> Bundle:
    """The participant's bundle in this study (resumed on a reload). The id is checked for shape only: it
    names the session, it does not prove anything."""
    if not study.active:
        raise ValidationError("this study is closed")
    if not PARTICIPANT_ID.match(participant or ""):
        raise ValidationError(
            f"the link needs a participant id in `{study.participant_param}` (1 to 64 letters, digits, - or _)"
        )
    worker = worker_for_external(source=WorkerSource.EXTERNAL, external_id=participant)
    return bundle_open(
        provider=Provider.EXTERNAL,
        external_ref=f"{study.key}:{participant}",
        worker=worker,
        dataset=study.dataset,
        kind=study.kind,
    )


def completion_redeem(*, study: StudyLink, participant: str, code: str) -> Bundle:
    """Accept a completion code reported by the marketplace for `participant`, once."""
    bundle_part, _, mac = (code or "").strip().partition("-")
    bundle = None
    if bundle_part.isdigit():
        bundle = Bundle.objects.filter(
            pk=int(bundle_part), provider=Provider.EXTERNAL, external_ref=f"{study.key}:{participant}"
        ).first()
    expected = _mac(bundle.pk, study.key, participant).upper() if bundle is not None else ""
    if bundle is None or not constant_time_compare(mac.upper(), expected):
        raise CodeRefused("this completion code was not issued to this participant in this study")
    if bundle.state != BundleState.COMPLETE:
        raise CodeRefused("this participant's bundle is not complete")
    try:
        with transaction.atomic():
            CompletionRedemption.objects.create(bundle=bundle)
    except IntegrityError:
        raise CodeReplayed("this completion code was redeemed already") from None
    return bundle


@dataclass(frozen=True)
class RedeemOutcome:
    participant: str
    code: str
    status: str  # redeemed, already_redeemed, refused
    bundle: int | None
    detail: str = ""


def completions_redeem_many(*, study: StudyLink, codes: list[tuple[str, str]]) -> list[RedeemOutcome]:
    """Accept many reported codes at once (an organizer approving a marketplace's batch): each through
    `completion_redeem`, in its own transaction, so a wrong or replayed code is reported and never stops the
    others. Idempotent: a code accepted before, by this request's earlier run or another, reads
    `already_redeemed`."""
    outcomes = []
    for participant, code in codes:
        try:
            bundle = completion_redeem(study=study, participant=participant, code=code)
        except CodeReplayed as exc:
            bundle_part = (code or "").strip().partition("-")[0]
            outcomes.append(
                RedeemOutcome(
                    participant,
                    code,
                    "already_redeemed",
                    int(bundle_part) if bundle_part.isdigit() else None,
                    str(exc),
                )
            )
        except CodeRefused as exc:
            outcomes.append(RedeemOutcome(participant, code, "refused", None, str(exc)))
        else:
            outcomes.append(RedeemOutcome(participant, code, "redeemed", bundle.pk))
    return outcomes


@dataclass(frozen=True)
class CompletionRow:
    participant: str
    bundle: int
    code: str
    answered: int
    size: int
    short: bool
    completed_at: str
    redeemed: bool
    recommendation: str


def completions_list(study: StudyLink) -> list[CompletionRow]:
    bundles = list(
        Bundle.objects.filter(
            provider=Provider.EXTERNAL, external_ref__startswith=f"{study.key}:", state=BundleState.COMPLETE
        )
        .select_related("redemption")
        .order_by("id")
    )
    decisions = bundle_decisions(bundles)
    return [
        CompletionRow(
            participant=_participant(b),
            bundle=b.pk,
            code=completion_code(b),
            answered=b.answered,
            size=b.size,
            short=b.short,
            completed_at=b.completed_at.isoformat() if b.completed_at else "",
            redeemed=hasattr(b, "redemption"),
            recommendation=bundle_recommendation(decisions.get(b.pk, [])),
        )
        for b in bundles
    ]


def completions_csv(rows: list[CompletionRow]) -> str:
    return csv_text(list(CompletionRow.__dataclass_fields__), (asdict(row) for row in rows))
