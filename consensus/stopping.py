"""Sequential stopping rules for binary questions: after each vote, accept, reject, ask another worker or review.

Dynamic consensus (ILSVRC §3.1.3) looks P(positive | a, b) up in the concept's confidence table and stops as soon
as it is confident either way (`ThresholdPolicy`; the weighted estimator and the favour-yes thresholds of
hierarchy questions are the same policy fed another P or other thresholds). The count rules that need no table
are policies with the same interface: a fixed majority with early stop (`MajorityPolicy`: the plain vote kind
and simulate's `majorityN`), first to k votes (`FirstToPolicy`: the fixed box-question backend) and a lead by a
margin (`MarginPolicy`: multi-label's `vote` engine). A consensus question carries its count policy as data
(`rule_of` / `policy_of`); every yes/no in the platform is decided here, by `consensus.engine`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from consensus.calibration import DEFAULT_CAP, ConfidenceTable

DEFAULT_TARGET_PRECISION = 0.997
# Share of rejected items allowed to be positives; it trades recall for votes and may be looser than the
# precision target because a false reject loses one image while a false accept pollutes the dataset.
DEFAULT_REJECT_ERROR = 0.02


class Decision(StrEnum):
    """Outcome after a vote; values match the TextChoices the Django layer stores."""

    ASK_MORE = "ask_more"
    ACCEPT = "accept"
    REJECT = "reject"
    REVIEW = "review"

    @property
    def code(self) -> int:
        return DECISION_CODES[self]

    @classmethod
    def from_code(cls, code: int) -> Decision:
        return _BY_CODE[int(code)]


# Integer codes used by the vectorized paths (int8 arrays); ASK_MORE is 0 so "undecided" is falsy.
ASK_MORE, ACCEPT, REJECT, REVIEW = 0, 1, 2, 3
DECISION_CODES = {
    Decision.ASK_MORE: ASK_MORE,
    Decision.ACCEPT: ACCEPT,
    Decision.REJECT: REJECT,
    Decision.REVIEW: REVIEW,
}
_BY_CODE = {v: k for k, v in DECISION_CODES.items()}


class StoppingPolicy(Protocol):
    """Anything that turns vote counts (and optionally a table) into decision codes."""

    @property
    def cap(self) -> int: ...

    def decide_counts(
        self, table: ConfidenceTable | None, a: NDArray[np.int64], b: NDArray[np.int64]
    ) -> NDArray[np.int8]: ...


@dataclass(frozen=True)
class ThresholdPolicy:
    """Dynamic consensus: accept when P >= tau_accept, reject when P <= tau_reject, review at the vote cap."""

    tau_accept: float
    tau_reject: float
    cap: int = DEFAULT_CAP

    def __post_init__(self) -> None:
        if not 0.0 <= self.tau_reject < self.tau_accept <= 1.0:
            raise ValueError("need 0 <= tau_reject < tau_accept <= 1")
        if self.cap < 1:
            raise ValueError("cap must be at least 1")

    def decide_probability(self, p: ArrayLike, n_votes: ArrayLike) -> NDArray[np.int8]:
        """Decision codes from P(positive) after ``n_votes`` votes (shared with the reliability-weighted path)."""
        p_arr = np.asarray(p, dtype=np.float64)
        n_arr = np.asarray(n_votes, dtype=np.int64)
        out = np.where(n_arr >= self.cap, REVIEW, ASK_MORE).astype(np.int8)
        out = np.where(p_arr <= self.tau_reject, REJECT, out)
        # Accept wins over reject only if thresholds were degenerate, which __post_init__ forbids.
        return np.where(p_arr >= self.tau_accept, ACCEPT, out).astype(np.int8)

    def decide_counts(
        self, table: ConfidenceTable | None, a: NDArray[np.int64], b: NDArray[np.int64]
    ) -> NDArray[np.int8]:
        if table is None:
            raise ValueError("dynamic consensus needs a calibration table")
        if table.cap < self.cap:
            raise ValueError(f"table covers {table.cap} votes but the policy may ask for {self.cap}")
        # Past the table's reach P is NaN, which meets neither threshold, so the cap sends the item to review.
        return self.decide_probability(table.lookup(a, b), a + b)


@dataclass(frozen=True)
class MajorityPolicy:
    """Fixed majority of ``n_votes`` with early stop once the majority is decided; an even-split tie goes to review."""

    n_votes: int = 3

    def __post_init__(self) -> None:
        if self.n_votes < 1:
            raise ValueError("a majority needs at least one vote")

    @property
    def cap(self) -> int:
        return self.n_votes

    @property
    def needed(self) -> int:
        return self.n_votes // 2 + 1

    def decide_counts(
        self, table: ConfidenceTable | None, a: NDArray[np.int64], b: NDArray[np.int64]
    ) -> NDArray[np.int8]:
        out = np.where(a + b >= self.n_votes, REVIEW, ASK_MORE).astype(np.int8)
        out = np.where(b >= self.needed, REJECT, out)
        return np.where(a >= self.needed, ACCEPT, out).astype(np.int8)

    def __str__(self) -> str:
        return f"majority of {self.n_votes}"


@dataclass(frozen=True)
class FirstToPolicy:
    """Accept at ``yes_needed`` yes votes, reject at ``no_needed`` no votes, whichever comes first; the vote cap
    (``yes_needed + no_needed - 1``, where one of them must have been reached) can only be met by a reject or an
    accept, so REVIEW never happens. An asymmetric pair decides one side on fewer votes."""

    yes_needed: int
    no_needed: int

    def __post_init__(self) -> None:
        if min(self.yes_needed, self.no_needed) < 1:
            raise ValueError("each side needs at least one vote")

    @property
    def cap(self) -> int:
        return self.yes_needed + self.no_needed - 1

    def decide_counts(
        self, table: ConfidenceTable | None, a: NDArray[np.int64], b: NDArray[np.int64]
    ) -> NDArray[np.int8]:
        out = np.where(a + b >= self.cap, REVIEW, ASK_MORE).astype(np.int8)
        out = np.where(b >= self.no_needed, REJECT, out)
        return np.where(a >= self.yes_needed, ACCEPT, out).astype(np.int8)

    def __str__(self) -> str:
        return f"{self.yes_needed} yes or {self.no_needed} no"


@dataclass(frozen=True)
class MarginPolicy:
    """A sequential vote that stops when one answer leads the other by its margin; at the vote cap the majority
    wins and a tie is decided ``at_cap`` (True: yes, False: no). Biased to "yes" when ``no_margin`` is the
    larger: a false "no" on a high-level hierarchy question prunes a whole subtree unasked (ILSVRC §3.3.3)."""

    yes_margin: int
    no_margin: int
    max_votes: int
    at_cap: bool = True

    def __post_init__(self) -> None:
        if min(self.yes_margin, self.no_margin) < 1 or self.max_votes < max(self.yes_margin, self.no_margin):
            raise ValueError("margins must be >= 1 and reachable within max_votes")

    @property
    def cap(self) -> int:
        return self.max_votes

    def decide_counts(
        self, table: ConfidenceTable | None, a: NDArray[np.int64], b: NDArray[np.int64]
    ) -> NDArray[np.int8]:
        tie = ACCEPT if self.at_cap else REJECT
        at_cap = np.where(a > b, ACCEPT, np.where(b > a, REJECT, tie))
        out = np.where(a + b >= self.max_votes, at_cap, ASK_MORE).astype(np.int8)
        out = np.where(b - a >= self.no_margin, REJECT, out)
        return np.where(a - b >= self.yes_margin, ACCEPT, out).astype(np.int8)

    def __str__(self) -> str:
        return f"lead of {self.yes_margin} yes or {self.no_margin} no within {self.max_votes}"


# A count policy as data: what a consensus question stores in its `rule` (an empty rule means the dataset's
# calibrated policy, `ThresholdPolicy` from its settings, read with the dynamic or weighted estimator).
CountPolicy = MajorityPolicy | FirstToPolicy | MarginPolicy
_SPEC_NAMES: dict[str, type] = {"majority": MajorityPolicy, "first_to": FirstToPolicy, "margin": MarginPolicy}
# What a count rule does with REVIEW (a majority's tie at the cap): send the question to a person, or close it
# without an answer (the plain vote kind's tie).
ON_REVIEW = ("review", "close")


def rule_of(policy: CountPolicy, *, on_review: str = "review") -> dict:
    """The JSON spec of a count policy: ``{"policy": "majority", "n_votes": 3, "on_review": "close"}``."""
    if on_review not in ON_REVIEW:
        raise ValueError(f"on_review must be one of {', '.join(ON_REVIEW)}, not {on_review!r}")
    name = next((n for n, cls in _SPEC_NAMES.items() if isinstance(policy, cls)), None)
    if name is None:
        raise ValueError(f"{type(policy).__name__} is not a count policy a question can carry")
    return {"policy": name, **dataclasses.asdict(policy), "on_review": on_review}


def policy_of(rule: dict) -> CountPolicy:
    """The count policy a question's `rule` spec names; a ValueError names what is wrong with a bad spec."""
    fields = {k: v for k, v in rule.items() if k not in ("policy", "on_review")}
    cls = _SPEC_NAMES.get(rule.get("policy", ""))
    if cls is None:
        raise ValueError(f"unknown count policy {rule.get('policy')!r}; known: {', '.join(_SPEC_NAMES)}")
    if rule.get("on_review", "review") not in ON_REVIEW:
        raise ValueError(f"on_review must be one of {', '.join(ON_REVIEW)}")
    try:
        return cls(**fields)
    except TypeError as error:
        raise ValueError(f"bad {rule['policy']} rule {fields}: {error}") from None


def outcome_of(decision: Decision) -> bool | None:
    """The answer a decision gives: True when accepted, False when rejected, None while open or in review."""
    return {Decision.ACCEPT: True, Decision.REJECT: False}.get(decision)


def thresholds_for_precision(
    target_precision: float = DEFAULT_TARGET_PRECISION,
    *,
    reject_error: float = DEFAULT_REJECT_ERROR,
    favour_yes: bool = False,
    cap: int = DEFAULT_CAP,
) -> ThresholdPolicy:
    """Thresholds that deliver ``target_precision`` among accepted items when the table is calibrated.

    The precision of the accepted set is the mean of P(positive) over the items accepted; accepting only at
    P >= tau makes every term >= tau, so tau_accept = target_precision guarantees it (conservatively: items
    accepted well above tau add slack). Symmetrically, rejecting at P <= tau_reject bounds the share of positives
    among rejected items by tau_reject = reject_error. With ``favour_yes`` (hierarchy questions, where a false
    "no" prunes a whole subtree, ILSVRC §3.3.3) a reject must be as sure as an accept: tau_reject =
    1 - target_precision, tighter than reject_error.
    """
    if not 0.5 < target_precision < 1.0:
        raise ValueError("target_precision must lie in (0.5, 1)")
    if not 0.0 < reject_error < 0.5:
        raise ValueError("reject_error must lie in (0, 0.5)")
    tau_reject = min(reject_error, 1.0 - target_precision) if favour_yes else reject_error
    return ThresholdPolicy(tau_accept=target_precision, tau_reject=tau_reject, cap=cap)


# A question still this unsure at the vote cap goes to a person, whatever the budget allows.
SETTLE_MIN_CONFIDENCE = 0.95


@dataclass(frozen=True)
class DecidedSoFar:
    """What a (dataset, kind, concept) has decided so far: counts and the expected errors among them (the sum of
    1 - P over accepted questions, of P over rejected ones), for a calibrated P."""

    accepted: int = 0
    accepted_risk: float = 0.0
    rejected: int = 0
    rejected_risk: float = 0.0


def settle_at_cap(p: float, so_far: DecidedSoFar, policy: ThresholdPolicy) -> Decision:
    """Accept, reject or review a question that reached the vote cap undecided.

    The thresholds guarantee a property of the *set*: accepting only at P >= tau_accept keeps the expected
    precision of the accepted labels, the mean of their P, at least tau_accept, and every label accepted above
    tau leaves slack (ILSVRC §3.1.3 sets the threshold for a desired accuracy of the labels, not of each one).
    A capped question is settled on the side its P leans to when the set stays within its bound with it
    included and P is at least SETTLE_MIN_CONFIDENCE sure; otherwise it goes to review. Hard candidates,
    which honest workers split on, are labelled instead of being lost at the cap; coin flips still reach a
    person."""
    if np.isnan(p):
        return Decision.REVIEW
    if p >= SETTLE_MIN_CONFIDENCE:
        expected_fp = (so_far.accepted_risk + (1.0 - p)) / (so_far.accepted + 1)
        if expected_fp <= 1.0 - policy.tau_accept:
            return Decision.ACCEPT
    if p <= 1.0 - SETTLE_MIN_CONFIDENCE:
        expected_fn = (so_far.rejected_risk + p) / (so_far.rejected + 1)
        if expected_fn <= policy.tau_reject:
            return Decision.REJECT
    return Decision.REVIEW


def decide(table: ConfidenceTable | None, a: int, b: int, policy: StoppingPolicy) -> Decision:
    """Decision after ``a`` yes and ``b`` no votes."""
    if a < 0 or b < 0:
        raise ValueError("vote counts cannot be negative")
    code = policy.decide_counts(table, np.array([a], dtype=np.int64), np.array([b], dtype=np.int64))[0]
    return Decision.from_code(int(code))


def decide_many(
    table: ConfidenceTable | None, a: ArrayLike, b: ArrayLike, policy: StoppingPolicy
) -> NDArray[np.int8]:
    """Vectorized ``decide``: int8 decision codes (ASK_MORE=0, ACCEPT=1, REJECT=2, REVIEW=3) for many patterns."""
    a_arr = np.asarray(a, dtype=np.int64)
    b_arr = np.asarray(b, dtype=np.int64)
    if np.any(a_arr < 0) or np.any(b_arr < 0):
        raise ValueError("vote counts cannot be negative")
    return policy.decide_counts(table, a_arr, b_arr)


def decision_matrix(table: ConfidenceTable | None, policy: StoppingPolicy) -> NDArray[np.int8]:
    """Decision code for every pattern (a, b) with a + b <= policy.cap; handy to print or to precompute lookups."""
    cap = policy.cap
    a, b = np.meshgrid(np.arange(cap + 1), np.arange(cap + 1), indexing="ij")
    out = np.full((cap + 1, cap + 1), -1, dtype=np.int8)
    inside = a + b <= cap
    out[inside] = policy.decide_counts(table, a[inside], b[inside])
    return out


def first_decisions(
    table: ConfidenceTable | None,
    answers: NDArray[np.bool_],
    policy: StoppingPolicy,
    start: ArrayLike = 1,
) -> tuple[NDArray[np.int8], NDArray[np.int64]]:
    """Run the rule over pre-drawn vote sequences (rows, arrival order): final code and votes spent per row.

    ``start`` (per row or scalar) is the number of votes already paid for before the rule is first consulted,
    e.g. the calibration votes of a calibration image. Rows whose sequence runs out undecided end ASK_MORE.
    """
    n_rows, width = answers.shape
    k = max(min(width, policy.cap), int(np.max(start)) if np.size(start) else 1)
    k = min(k, width)
    yes = np.cumsum(answers[:, :k], axis=1, dtype=np.int64)
    n = np.arange(1, k + 1, dtype=np.int64)[None, :]
    codes = policy.decide_counts(table, yes, n - yes)
    starts = np.broadcast_to(np.asarray(start, dtype=np.int64), (n_rows,))[:, None]
    decided = (codes != ASK_MORE) & (n >= starts)
    any_decided = decided.any(axis=1)
    first = np.where(any_decided, decided.argmax(axis=1), k - 1)
    final = np.where(any_decided, codes[np.arange(n_rows), first], ASK_MORE).astype(np.int8)
    return final, (first + 1).astype(np.int64)
