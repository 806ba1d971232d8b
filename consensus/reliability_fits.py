"""The Dawid-Skene fits the weighted estimator reads: one per scope (a question kind, or a (kind, concept)),
refitted from the stored votes when they have grown, kept in the process between votes.

Refitting at every vote cost O(votes) per vote: fine for one concept's thousands of votes, but the kind-wide fit
that decides rare hierarchy concepts sees every vote of the kind, and a 500-image multi-label run would spend
hours refitting. Worker rates move slowly, so a fit is reused until the scope's votes grow by REFIT_GROWTH (or
any vote is voided); small scopes (under CACHE_MIN_VOTES votes, every test) are refitted at every vote. Each fit
keeps the workers' standing under it (consensus/standing.py), which the dynamic estimator's evidence tables read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db import connection
from django.db.models import Max

from .models import Vote, VoteVoid
from .reliability import DawidSkeneResult, WorkerReliability, fit_dawid_skene, fit_item_difficulty
from .standing import Standing, standing_of

CACHE_MIN_VOTES = 1000
REFIT_GROWTH = 0.05


@dataclass(frozen=True)
class _Fit:
    vote_clock: int  # the newest vote id in the database when fitted
    void_clock: int  # the newest void id when fitted
    n_votes: int
    result: DawidSkeneResult
    standing: Standing


_fits: dict[tuple[str, str, int | None], _Fit] = {}


def reliability_for(kind: str, concept_id: int | None) -> WorkerReliability | None:
    """Worker rates fitted on every counted vote of `kind` (of `concept_id`'s questions when given), in any
    dataset; None while the scope has no vote."""
    result = fit_for(kind, concept_id)
    return None if result is None else result.reliability


def fit_for(kind: str, concept_id: int | None) -> DawidSkeneResult | None:
    """The Dawid-Skene fit of the scope (worker rates and each question's posterior); None without votes."""
    fit = _fit_of(kind, concept_id)
    return None if fit is None else fit.result


def fit_with_standing(kind: str) -> tuple[DawidSkeneResult, Standing, int] | None:
    """The kind-wide fit, its workers' standing and how many votes it was fitted on; None without votes."""
    fit = _fit_of(kind, None)
    return None if fit is None else (fit.result, fit.standing, fit.n_votes)


def cached_standing(kind: str) -> tuple[Standing, int] | None:
    """The workers' standing under this process's kept kind-wide fit and the fit's vote clock (the newest vote id
    when fitted), without a statement (None while the process keeps none: fewer than CACHE_MIN_VOTES votes of
    the kind, or no vote of it submitted to this process yet). For the lease policy
    (consensus/standing_lease.py), which runs on every lease and must not refit."""
    fit = _fits.get((connection.alias, kind, None))
    return None if fit is None else (fit.standing, fit.vote_clock)


def _fit_of(kind: str, concept_id: int | None) -> _Fit | None:
    key = (connection.alias, kind, concept_id)
    vote_clock = Vote.objects.aggregate(m=Max("id"))["m"] or 0
    void_clock = VoteVoid.objects.aggregate(m=Max("id"))["m"] or 0
    fit = _fits.get(key)
    if (
        fit is not None
        and fit.void_clock == void_clock
        and fit.vote_clock <= vote_clock <= fit.vote_clock + REFIT_GROWTH * fit.n_votes
    ):
        return fit
    votes = Vote.objects.filter(question__kind=kind, void__isnull=True)
    if concept_id is not None:
        votes = votes.filter(question__concept_id=concept_id)
    rows = list(votes.values_list("question_id", "worker_id", "answer").order_by("id"))
    if not rows:
        return None
    items, workers, answers = (np.asarray(col) for col in zip(*rows, strict=True))
    yes = answers.astype(bool)
    # Worker rates, then the share of hard items the kind shows (consensus/reliability.py, *Hard items*).
    result = fit_item_difficulty(fit_dawid_skene(items, workers, yes), items, workers, yes)
    fit = _Fit(vote_clock, void_clock, len(rows), result, standing_of(result, items, workers, yes))
    if len(rows) >= CACHE_MIN_VOTES:
        _fits[key] = fit
    else:
        _fits.pop(key, None)
    return fit
