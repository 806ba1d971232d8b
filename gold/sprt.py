"""Worker quality from every answer: gold answers and agreement with confidently decided questions, weighed in
one sequential probability ratio test (Wald 1945) that blocks a worker whose answers carry no information about
the truth. Pure Python; no Django.

Evidence. Each piece is (reference, answer): a gold item's known answer, or the label the *other* voters gave a
decided question (leave-one-out: the worker's own vote never counts towards their reference) when those voters
lead by at least `reference_lead` votes. Voters whose answers co-occur suspiciously with the worker's (`partners`:
at least `partner_min_shared` shared questions, agreeing on at least `partner_agreement` of them) are left out of
the worker's references too, so a colluding pair never vouches for itself. Leaving a partner out costs evidence,
never a block, so an excellent honest pair that is flagged loses only some agreement evidence.

Evidence is kept apart by the reference's class (yes / no): sensitivity and specificity. An always-yes worker is
right on every positive; only the negatives tell, and this test reads both.

The test. H0 ("good"): sensitivity and specificity both >= p_gold on gold answers and both >= p_agreement on
agreement (harder questions, a reference that can err). H1 ("spam"): the answer is independent of the truth, yes
with some rate r whatever the reference (class-balanced accuracy 0.5 = p_spam; r = 1 is an always-yes worker,
r = 1/2 a coin), r unknown, mixed over a prior (Robbins' method of mixtures): mass `coin_weight` on r = 1/2,
`yes_weight` on r = 1 and the rest uniform over [0, 1]. The statistic is

    Lambda_n = integral r^yes (1 - r)^no dprior(r)  /  prod_(source, class) max_{s >= p_source} s^right (1 - s)^wrong

over the four groups (gold, agreement) x (reference yes, reference no), and the worker is blocked as soon as
Lambda_n >= A = (1 - beta) / alpha (Wald's upper boundary). There is no lower boundary: the test runs for as long
as the worker answers. For any worker in H0 whose answers are independent given the truth, the denominator is at
least the worker's true likelihood, so Lambda_n is bounded by a nonnegative martingale of mean 1 (whatever the
prior) and Ville's inequality gives P(ever blocked) <= 1 / A = alpha / (1 - beta), over an unlimited number of
answers. Under H1 Lambda_n grows without bound, so every spammer is blocked in the end (power one).

Error rates (defaults): alpha = 0.002, beta = 0.05, so a worker in H0 (right at least 85% of the time on each
class of gold, 80% on each class of agreement) is blocked with probability at most 0.0021, however long they
work. A worker whose answers carry no information is blocked with probability 1; how soon, exactly, on
class-balanced evidence (`block_probability`): on gold a coin-flipper by 30 answers with probability 0.820
(median 19), an always-yes worker with probability 1 (median 7, 83% by 10); on agreement 0.579 (median 27) and
1 (median 9). The point masses took an always-yes worker's median from 9 to 7 (gold) and 11 to 9 (agreement);
a coin-flipper's barely moves, because no rule can do much better: `fewest_answers` is the floor under any rule
(half the coin-flippers need >= 18.5 answers if workers right 70% of the time are blocked <= 1%).
docs/gold.md has the table and the simulated crowd's figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

DEFAULT_P_GOLD = 0.85
DEFAULT_P_AGREEMENT = 0.8
DEFAULT_ALPHA = 0.002
DEFAULT_BETA = 0.05
DEFAULT_REFERENCE_LEAD = 2  # others' lead: P >= 0.94 for voters right 80% of the time
DEFAULT_PARTNER_MIN_SHARED = 8
DEFAULT_PARTNER_AGREEMENT = 0.95  # honest pairs at 0.88 agree 79% of the time; colluders 100%
# The prior over an uninformative worker's yes rate r: point masses on the two kinds met in practice (a coin,
# r = 1/2; always-yes, r = 1) and the rest uniform over [0, 1] (any other rate, always-no included).
DEFAULT_COIN_WEIGHT = 0.5
DEFAULT_YES_WEIGHT = 0.25


@dataclass(frozen=True)
class SprtRule:
    p_gold: float = DEFAULT_P_GOLD  # H0 on gold answers (clear-cut items)
    p_agreement: float = DEFAULT_P_AGREEMENT  # H0 on agreement (harder questions, a reference that can err)
    alpha: float = DEFAULT_ALPHA
    beta: float = DEFAULT_BETA
    reference_lead: int = DEFAULT_REFERENCE_LEAD
    partner_min_shared: int = DEFAULT_PARTNER_MIN_SHARED
    partner_agreement: float = DEFAULT_PARTNER_AGREEMENT
    coin_weight: float = DEFAULT_COIN_WEIGHT  # prior mass on r = 1/2
    yes_weight: float = DEFAULT_YES_WEIGHT  # prior mass on r = 1; the rest is uniform over [0, 1]

    def __post_init__(self) -> None:
        if not (0.5 < self.p_gold < 1.0 and 0.5 < self.p_agreement < 1.0):
            raise ValueError("p_gold and p_agreement must be between 0.5 and 1")
        if not (0.0 < self.alpha < 1.0 and 0.0 <= self.beta < 1.0 and self.alpha + self.beta < 1.0):
            raise ValueError("need 0 < alpha, 0 <= beta and alpha + beta < 1")
        if not (
            0.0 <= self.coin_weight and 0.0 <= self.yes_weight and self.coin_weight + self.yes_weight < 1.0
        ):
            raise ValueError(
                "coin_weight and yes_weight must be >= 0 and leave some weight to the uniform part"
            )
        if self.reference_lead < 1 or self.partner_min_shared < 1:
            raise ValueError("reference_lead and partner_min_shared must be at least 1")

    @property
    def log_threshold(self) -> float:
        """log A, Wald's upper boundary: block at log Lambda >= this."""
        return math.log((1.0 - self.beta) / self.alpha)


@dataclass(frozen=True)
class Evidence:
    """Answers by the reference's class: tp (reference yes, answered yes), fn (yes, answered no), tn, fp."""

    tp: int = 0
    fn: int = 0
    tn: int = 0
    fp: int = 0

    def __add__(self, other: Evidence) -> Evidence:
        return Evidence(self.tp + other.tp, self.fn + other.fn, self.tn + other.tn, self.fp + other.fp)

    def __sub__(self, other: Evidence) -> Evidence:
        return Evidence(self.tp - other.tp, self.fn - other.fn, self.tn - other.tn, self.fp - other.fp)

    @property
    def answers(self) -> int:
        return self.tp + self.fn + self.tn + self.fp

    @property
    def right(self) -> int:
        return self.tp + self.tn

    @staticmethod
    def one(reference: bool, answer: bool) -> Evidence:
        if reference:
            return Evidence(tp=1) if answer else Evidence(fn=1)
        return Evidence(fp=1) if answer else Evidence(tn=1)


@dataclass(frozen=True)
class SprtVerdict:
    gold: Evidence
    agreement: Evidence
    llr: float  # log Lambda
    threshold: float  # log A
    blocked: bool


def _log_sup(right: int, wrong: int, p: float) -> float:
    """log max_{s >= p} s^right (1 - s)^wrong."""
    if right + wrong == 0:
        return 0.0
    s = max(p, right / (right + wrong))
    out = right * math.log(s) if right else 0.0
    if wrong:
        out += wrong * math.log1p(-s)  # s < 1 here: s = 1 only when wrong == 0
    return out


def log_mixture(yes: int, answers: int, rule: SprtRule = SprtRule()) -> float:
    """log of the prior mixture of r^yes (1 - r)^no: coin_weight at r = 1/2, yes_weight at r = 1, the rest
    uniform (the Beta integral B(yes + 1, no + 1))."""
    no = answers - yes
    terms = [
        math.log1p(-rule.coin_weight - rule.yes_weight)
        + math.lgamma(yes + 1)
        + math.lgamma(no + 1)
        - math.lgamma(answers + 2)
    ]
    if rule.coin_weight > 0.0:
        terms.append(math.log(rule.coin_weight) - answers * math.log(2.0))
    if rule.yes_weight > 0.0 and no == 0:
        terms.append(math.log(rule.yes_weight))
    top = max(terms)
    return top + math.log(sum(math.exp(t - top) for t in terms))


def log_likelihood_ratio(
    gold: Evidence, agreement: Evidence = Evidence(), rule: SprtRule = SprtRule()
) -> float:
    """log Lambda: the mixture over the yes rate of an uninformative worker (one rate for all their answers)
    against the best fit of a good one (module docstring)."""
    e = gold + agreement
    return (
        log_mixture(e.tp + e.fp, e.answers, rule)
        - _log_sup(gold.tp, gold.fn, rule.p_gold)
        - _log_sup(gold.tn, gold.fp, rule.p_gold)
        - _log_sup(agreement.tp, agreement.fn, rule.p_agreement)
        - _log_sup(agreement.tn, agreement.fp, rule.p_agreement)
    )


def verdict(gold: Evidence, agreement: Evidence = Evidence(), rule: SprtRule = SprtRule()) -> SprtVerdict:
    llr = log_likelihood_ratio(gold, agreement, rule)
    return SprtVerdict(
        gold=gold,
        agreement=agreement,
        llr=llr,
        threshold=rule.log_threshold,
        blocked=llr >= rule.log_threshold,
    )


def gold_evidence(pairs: Iterable[tuple[bool, bool]]) -> Evidence:
    """Evidence from gold answers: (the item's answer, the worker's answer) pairs."""
    out = Evidence()
    for reference, answer in pairs:
        out += Evidence.one(bool(reference), bool(answer))
    return out


def partners(
    worker: int, questions: Iterable[Mapping[int, bool]], rule: SprtRule = SprtRule()
) -> frozenset[int]:
    """The voters whose answers co-occur with `worker`'s too often for honest workers: at least
    `partner_min_shared` questions voted on by both, agreeing on at least `partner_agreement` of them.
    `questions`: every question the worker voted on (decided or not), as {voter: answer} of its valid votes."""
    shared: dict[int, int] = {}
    agreed: dict[int, int] = {}
    for votes in questions:
        mine = votes.get(worker)
        if mine is None:
            continue
        for other, answer in votes.items():
            if other == worker:
                continue
            shared[other] = shared.get(other, 0) + 1
            agreed[other] = agreed.get(other, 0) + (answer == mine)
    return frozenset(
        v
        for v, n in shared.items()
        if n >= rule.partner_min_shared and agreed[v] >= rule.partner_agreement * n
    )


def reference_of(
    worker: int, votes: Mapping[int, bool], excluded: frozenset[int], rule: SprtRule = SprtRule()
) -> bool | None:
    """The label the other voters (not `worker`, none of `excluded`) give a decided question, when they lead by
    at least `reference_lead`; None when they do not (the question says nothing reliable about this worker)."""
    yes = no = 0
    for voter, answer in votes.items():
        if voter == worker or voter in excluded:
            continue
        if answer:
            yes += 1
        else:
            no += 1
    if abs(yes - no) < rule.reference_lead:
        return None
    return yes > no


def agreement_evidence(
    worker: int,
    decided: Iterable[Mapping[int, bool]],
    excluded: frozenset[int] = frozenset(),
    rule: SprtRule = SprtRule(),
) -> Evidence:
    """Evidence from the decided questions the worker voted on ({voter: answer} of each one's valid votes),
    each against the leave-one-out reference of the others, partners (`excluded`) left out."""
    out = Evidence()
    for votes in decided:
        answer = votes.get(worker)
        if answer is None:
            continue
        reference = reference_of(worker, votes, excluded, rule)
        if reference is not None:
            out += Evidence.one(reference, answer)
    return out


def worker_verdict(
    worker: int,
    gold: Iterable[tuple[bool, bool]],
    decided: Iterable[Mapping[int, bool]],
    voted: Iterable[Mapping[int, bool]],
    rule: SprtRule = SprtRule(),
) -> SprtVerdict:
    """The one test over all the worker's evidence: gold (reference, answer) pairs, the decided questions they
    voted on and every question they voted on (for partners), each as {voter: answer} of its valid votes."""
    excluded = partners(worker, voted, rule)
    return verdict(gold_evidence(gold), agreement_evidence(worker, decided, excluded, rule), rule)


def block_probability(
    accuracy_yes: float,
    accuracy_no: float,
    positive_rate: float = 0.5,
    answers: int = 30,
    rule: SprtRule = SprtRule(),
    agreement: bool = False,
) -> list[float]:
    """Exact P(blocked within n answers) for n = 1..answers, for a worker right with probability `accuracy_yes`
    on positives and `accuracy_no` on negatives, each reference positive with probability `positive_rate`
    (independent answers), all of them gold (or all agreement): the sum over every path of evidence, the test
    checked after each answer."""
    mass: dict[tuple[int, int, int, int], float] = {(0, 0, 0, 0): 1.0}
    out, total = [], 0.0
    steps = (
        ((1, 0, 0, 0), positive_rate * accuracy_yes),
        ((0, 1, 0, 0), positive_rate * (1 - accuracy_yes)),
        ((0, 0, 1, 0), (1 - positive_rate) * accuracy_no),
        ((0, 0, 0, 1), (1 - positive_rate) * (1 - accuracy_no)),
    )
    for _ in range(answers):
        step: dict[tuple[int, int, int, int], float] = {}
        for state, m in mass.items():
            for d, p in steps:
                if p <= 0.0:
                    continue
                s = (state[0] + d[0], state[1] + d[1], state[2] + d[2], state[3] + d[3])
                step[s] = step.get(s, 0.0) + m * p
        mass = {}
        for s, m in step.items():
            e = Evidence(*s)
            if (verdict(Evidence(), e, rule) if agreement else verdict(e, Evidence(), rule)).blocked:
                total += m
            else:
                mass[s] = m
        out.append(total)
    return out


def _bernoulli_kl(p: float, q: float) -> float:
    """KL(Bernoulli(p) || Bernoulli(q)) in nats."""
    out = 0.0
    if p > 0.0:
        out += p * math.log(p / q)
    if p < 1.0:
        out += (1.0 - p) * math.log((1.0 - p) / (1.0 - q))
    return out


def fewest_answers(honest_accuracy: float, honest_blocked: float, spammers_blocked: float) -> float:
    """A floor under any blocking rule whatever its evidence of right and wrong answers: the fewest answers n
    by which it can block `spammers_blocked` of the coin-flippers while blocking at most `honest_blocked` of the
    workers right with probability `honest_accuracy` on every answer. The event "blocked by n" has probabilities
    q (coin) and a (honest); by the data-processing inequality d(q || a) <= n KL(coin || honest) per answer, d
    the Bernoulli divergence. A test that looks after every answer blocks more honest workers than its figure
    at n, so the floor holds for it too."""
    if not (0.5 < honest_accuracy < 1.0 and 0.0 < honest_blocked < spammers_blocked < 1.0):
        raise ValueError("need 0.5 < honest_accuracy < 1 and 0 < honest_blocked < spammers_blocked < 1")
    return _bernoulli_kl(spammers_blocked, honest_blocked) / _bernoulli_kl(0.5, honest_accuracy)
