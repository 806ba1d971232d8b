"""How the engine weighs a question's votes: the accept / reject thresholds a dataset (and a pipeline's stricter
subject keys) ask for, the calibration table in use for a (kind, concept), and the estimate of P(positive) by
the dataset's estimator (dynamic calibration table, reliability-weighted posterior, or a count rule). Read-only:
`consensus.engine` decides and writes."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from django.db.models import F, Max, Q

from .calibration import DEFAULT_CAP, ConfidenceTable, prior_table
from .evidence_table import EvidenceTable, evidence
from .models import (
    CalibrationTable,
    ConsensusSettings,
    Estimator,
    Question,
    QuestionKind,
    QuestionRole,
    Vote,
)
from .reliability import posterior_positive
from .reliability_fits import fit_for, fit_with_standing
from .stopping import (
    ThresholdPolicy,
    thresholds_for_precision,
)

# Accuracy assumed of every worker when neither a concept table nor the kind's calibration data exists (the box
# pipeline's prior, boxes/questions.py): accept at 3 more yes than no, reject at 2 more no.
NO_DATA_ACCURACY = 0.9
# The kinds the weighted estimator always decides. Box questions start from their table (the prior, then a
# calibrated one): they exclude the box's drawers and arrive one box job at a time (docs/boxes.md).
WEIGHTED_KINDS = (QuestionKind.IMAGE_VERIFY, QuestionKind.HIERARCHY)
# Coverage questions are read with the weighted estimator too, once their kind has this many counted votes in
# all: a record long enough that an always-yes voter's "yes" is known to carry nothing (under a hostile crowd the
# prior table's "3 more yes than no" let three spammers finish a job with instances unboxed). Before that, the
# table (the prior) decides, so a young deployment's first box jobs move on. Quality questions keep their table:
# read with the kind-wide fit, 15 of 61 box jobs of a clean 30-image run went to review, quality undecidable.
WEIGHTED_BOX_KINDS = (QuestionKind.BOX_COVERAGE,)
BOX_WEIGHTED_MIN_VOTES = 200
# The kinds whose tables also carry an evidence table (consensus/evidence_table.py), which `dynamic` reads: the
# count table reads only how many said yes and no, so spammers' votes flatten it (docs/consensus.md).
EVIDENCE_KINDS = WEIGHTED_KINDS
# An evidence table is built again (on the vote that finds it due, through the outbox) once the kind's fit has
# this many times the votes the table was built under: the table's observations are read with a fit that knows
# the crowd better, at most once per doubling (a handful of times in a dataset's life), never per vote, and not
# before EVIDENCE_REFRESH_MIN_VOTES new votes (a small dataset keeps the table its batch built).
EVIDENCE_REFRESH_GROWTH = 2.0
EVIDENCE_REFRESH_MIN_VOTES = 500

# A pipeline may ask for a stricter accept threshold on its own questions through this subject key (never a
# looser one than the dataset's): Algorithm 1 does for leaves, whose "yes" is confused with a sibling's.
TARGET_PRECISION_KEY = "target_precision"
# Likewise a stricter reject error (never a looser one): Algorithm 1 asks it of leaves, whose rejects outnumber
# the present classes, so the dataset's per-question reject error would cost most of the recall.
REJECT_ERROR_KEY = "reject_error"


def policy_for(settings: ConsensusSettings, kind: str, subject: dict | None = None) -> ThresholdPolicy:
    target, reject_error = settings.target_precision, settings.reject_error
    wanted = (subject or {}).get(TARGET_PRECISION_KEY)
    if wanted is not None:
        target = max(target, float(wanted))
    wanted = (subject or {}).get(REJECT_ERROR_KEY)
    if wanted is not None:
        reject_error = min(reject_error, float(wanted))
    # Hierarchy questions favour "yes": a false "no" prunes a whole subtree (ILSVRC §3.3.3).
    return thresholds_for_precision(
        target,
        reject_error=reject_error,
        favour_yes=settings.favour_yes or kind == QuestionKind.HIERARCHY,
        cap=settings.vote_cap,
    )


def table_newest(kind: str, concept_id: int) -> CalibrationTable | None:
    """The newest stored table of (kind, concept), whatever data it came from (for display)."""
    return CalibrationTable.objects.filter(kind=kind, concept_id=concept_id).order_by("-id").first()


def table_in_use(kind: str, concept_id: int, min_images: int) -> CalibrationTable | None:
    """The table a dataset whose `calibration_min` is `min_images` decides (kind, concept) with: the newest one
    built from at least that many distinct calibration subjects, or a prior (box questions; n_images 0).

    Tables are shared by every dataset, so a table built from too little data (an early build from the first
    one to three hierarchy questions, before this rule existed) is never used: the lookup skips it and falls
    back to an older good table, or to none."""
    return (
        CalibrationTable.objects.filter(kind=kind, concept_id=concept_id)
        .filter(Q(n_images__gte=min_images) | Q(n_images=0, n_votes=0))
        .order_by("-id")
        .first()
    )


def evidence_refresh_due(row: CalibrationTable, fit_votes: int) -> bool:
    """Whether the kind's fit (of `fit_votes` votes) has outgrown the fit row's evidence table was built under."""
    built_under = row.table.get("fit_votes")
    if built_under is None:
        return False
    return fit_votes >= max(EVIDENCE_REFRESH_GROWTH * built_under, built_under + EVIDENCE_REFRESH_MIN_VOTES)


def table_cap() -> int:
    # A table must cover every dataset's vote cap, or lookups past it read as "undecided" until review.
    biggest = ConsensusSettings.objects.aggregate(m=Max("vote_cap"))["m"] or 0
    return max(DEFAULT_CAP, biggest)


@dataclass(frozen=True)
class Estimate:
    p: float | None
    table: CalibrationTable | None
    estimator: str = Estimator.DYNAMIC
    fit_votes: int | None = None  # an evidence table's reading: the votes of the kind's fit it was read with


def weighted_estimate(question: Question) -> Estimate:
    """Dawid-Skene over every vote of the question's kind, in any dataset (fits reused while votes grow a
    little: consensus/reliability_fits.py): a worker's record weighs their vote. The base rate is the
    concept's own, the mean posterior of its questions in the fit (two pseudo-questions at the kind's rate)."""
    fit = fit_for(question.kind, None)
    if fit is None:
        return Estimate(None, None, Estimator.WEIGHTED)
    # Read into a list first: numpy, handed the queryset itself, turns a database error raised while it reads
    # (a killed connection) into a TypeError that the request's lost-connection handling does not recognise.
    ids = np.asarray(
        list(
            Question.objects.filter(kind=question.kind, concept_id=question.concept_id).values_list(
                "pk", flat=True
            )
        ),
        dtype=np.int64,
    )
    at = np.minimum(np.searchsorted(fit.item_ids, ids), max(fit.item_ids.size - 1, 0))
    seen = fit.item_ids[at] == ids if fit.item_ids.size else np.zeros(ids.shape, dtype=bool)
    kind_rate = fit.reliability.prior
    rate = (float(fit.posterior[at[seen]].sum()) + 2.0 * kind_rate) / (int(seen.sum()) + 2.0)
    rate = min(max(rate, 1e-3), 1.0 - 1e-3)
    mine = list(Vote.objects.filter(question=question, void__isnull=True).values_list("worker_id", "answer"))
    workers = np.asarray([w for w, _ in mine], dtype=np.int64)
    answers = np.asarray([a for _, a in mine], dtype=bool)
    reliability = replace(fit.reliability, prior=rate)
    return Estimate(posterior_positive(reliability, workers, answers), None, Estimator.WEIGHTED)


def kind_has_calibration_data(kind: str, min_images: int) -> bool:
    """Whether the kind has at least `min_images` calibration questions with their calibration votes, over
    every concept: enough for the kind-wide Dawid-Skene fallback to know its workers."""
    complete = Question.objects.filter(kind=kind, role=QuestionRole.CALIBRATION).filter(
        yes_count__gte=F("min_votes") - F("no_count")
    )
    return complete[:min_images].count() >= min_images


def estimate_for(question: Question, settings: ConsensusSettings) -> Estimate:
    """P(positive) of the question from its votes so far under the dataset's estimator.

    Dynamic: the (kind, concept) table in use. A concept without one (a rare hierarchy leaf may never collect
    `calibration_min` calibration questions) falls back to Dawid-Skene over every vote of the kind, once the kind
    has that much calibration data: its questions are decided instead of waiting for a table that may never
    come. With neither, the votes are read with an assumed table (every worker right `NO_DATA_ACCURACY` of the
    time, `calibration.prior_table`)."""
    if settings.estimator == Estimator.WEIGHTED and question.kind in WEIGHTED_KINDS:
        # Worker rates from the whole kind (a spammer spams every class; a rare concept's few votes cannot tell
        # its workers apart), base rate from the concept (hierarchy nodes differ too much in how often they
        # are present to share one). Alternatives measured in docs/consensus.md, *Estimators*.
        return weighted_estimate(question)
    if settings.estimator == Estimator.WEIGHTED and question.kind in WEIGHTED_BOX_KINDS:
        fit = fit_for(question.kind, None)
        if fit is not None and int(fit.reliability.n_votes.sum()) >= BOX_WEIGHTED_MIN_VOTES:
            return weighted_estimate(question)
    row = table_in_use(question.kind, question.concept_id, settings.calibration_min)
    a, b = question.yes_count, question.no_count
    if row is not None and "evidence" in row.table:
        return _evidence_estimate(question, row)
    if row is None:
        if kind_has_calibration_data(question.kind, settings.calibration_min):
            return weighted_estimate(question)
        # Not even the kind has data (a young or tiny deployment): the assumed table the box pipeline starts
        # from, so a small dataset's questions are decided rather than waiting for data that never comes.
        assumed = prior_table(accuracy=NO_DATA_ACCURACY, cap=max(a + b, DEFAULT_CAP))
        return Estimate(assumed.p_positive(a, b), None)
    table = ConfidenceTable.from_dict(row.table)
    p = table.p_positive(a, b) if a + b <= table.cap else None
    return Estimate(p, row)


def _evidence_estimate(question: Question, row: CalibrationTable) -> Estimate:
    """The stored evidence table of (kind, concept) read at the evidence of the question's votes: each vote
    weighed by its worker's rates under the kind's current fit, workers out of good standing left out. Reads
    only: the table is stored again at its defined moments (consensus/rebuild.py), never by a vote."""
    fitted = fit_with_standing(question.kind)
    if fitted is None:
        return Estimate(None, row)
    result, standing, fit_votes = fitted
    mine = list(Vote.objects.filter(question=question, void__isnull=True).values_list("worker_id", "answer"))
    e = evidence(result.reliability, [w for w, _ in mine], [a for _, a in mine], standing.excluded)
    return Estimate(_evidence_table(row).p_positive(e), row, fit_votes=fit_votes)


_parsed: dict[tuple[int, object], EvidenceTable] = {}


def _evidence_table(row: CalibrationTable) -> EvidenceTable:
    # Stored rows never change: each is parsed once per process.
    key = (row.pk, row.created_at)  # ids come back in every test database
    table = _parsed.get(key)
    if table is None:
        table = _parsed[key] = EvidenceTable.from_dict(row.table["evidence"])
    return table


COUNTED = Estimate(None, None, Estimator.COUNT)
