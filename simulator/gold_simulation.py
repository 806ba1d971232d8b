"""A fast simulation of gold in a crowd: qualification, embedded gold at a rate, the blocking rule (today's
Beta-posterior rule of gold.scoring on gold answers, or gold.sprt's sequential test on gold and agreement with
decided questions), voiding a blocked worker's votes, and the final labels. Pure numpy, no Django: it plays the
rules of gold.serving and gold.services on simulator.simulated workers, for the simulation test and the cost bench.

Time is the workers' own: each worker takes its next task when it finishes the last one (answer times from the
simulator, so spammers, four times faster, take four times more tasks, as on a real marketplace).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from gold import scoring, sprt
from simulator.simulated import Crowd, CrowdSpec, SimulatedWorker, TaskKind, answer_binary, answer_seconds

_QUESTION_STREAM = 0x9E57
_GOLD_STREAM = 0x601D


@dataclass(frozen=True)
class GoldSimSpec:
    crowd: CrowdSpec
    n_questions: int = 4000
    n_classes: int = 20
    positive_rate: float = 0.6
    gold_rate: float = 0.1
    gold_items: int = 400  # the pool; balanced yes/no so an always-yes worker scores a coin's 50%
    qualification_size: int = scoring.DEFAULT_QUALIFICATION_SIZE  # a fixed, balanced set per attempt
    qualification_pass: int = scoring.DEFAULT_QUALIFICATION_PASS
    qualification_attempts: int = scoring.DEFAULT_QUALIFICATION_ATTEMPTS
    qualification_cooldown: float = scoring.DEFAULT_QUALIFICATION_COOLDOWN  # seconds before a retry
    lead: int = 3  # a question is decided when one answer leads by this many valid votes
    vote_cap: int = 11  # or by majority after this many valid votes
    easy_gold: bool = True  # gold items are clear-cut: no harder than the worker's base error rate
    rule: scoring.BlockRule = scoring.BlockRule()
    prior: scoring.Prior = scoring.Prior()
    # None: today's rule (the Beta posterior on gold answers only). A rule: gold.sprt's one test on every answer
    # (gold, and agreement with the other voters of each decided question, partners left out) blocks instead.
    sprt_rule: sprt.SprtRule | None = None
    seed: int = 0


@dataclass
class WorkerRecord:
    worker: SimulatedWorker
    gold_answered: int = 0
    gold_correct: int = 0
    attempt: list[bool] = field(default_factory=list)  # answers of the current qualification attempt
    failed_attempts: int = 0
    retry_at: float = 0.0
    qualified: bool = False
    blocked_at: int | None = None  # gold answers when blocked
    answers_at_block: int | None = None  # every answer (gold and votes) when blocked
    tasks: int = 0
    answers: int = 0  # gold answers and votes
    gold_evidence: sprt.Evidence = sprt.Evidence()  # the sequential test's
    agreement: sprt.Evidence = sprt.Evidence()
    gold_order: list[int] = field(default_factory=list)  # the worker's own shuffle of the pool
    gold_seen: set[int] = field(default_factory=set)  # never the same item twice


@dataclass(frozen=True)
class GoldSimResult:
    paid_tasks: int
    gold_tasks: int
    precision: float
    recall: float
    decided: int
    spammer_gold_to_block: list[int]  # gold answers at block, one per blocked spammer
    spammers: int
    spammers_blocked: int
    honest_fit: int  # honest workers (any non-spammer) with accuracy >= HONEST_FLOOR
    honest_fit_blocked: int
    honest_blocked: int  # any non-spammer, weak ones included
    spammers_qualified: int  # spammers who passed a qualification attempt
    nonspammer_accuracy: tuple[float, ...]  # every non-spammer's accuracy, and whether they were blocked
    nonspammer_blocked: tuple[bool, ...]
    # per spammer kind (random_spammer, yes_spammer, colluder): (workers, every answer each blocked one had given
    # when blocked, sorted)
    answers_to_block: dict[str, tuple[int, list[int]]] = field(default_factory=dict)

    @property
    def gold_share(self) -> float:
        return self.gold_tasks / self.paid_tasks if self.paid_tasks else 0.0

    def gold_to_block(self, q: float) -> float:
        return (
            float(np.quantile(self.spammer_gold_to_block, q)) if self.spammer_gold_to_block else float("nan")
        )

    def blocked_share(self, lo: float, hi: float = 1.01) -> tuple[int, int]:
        """(blocked, all) non-spammers with accuracy in [lo, hi)."""
        band = [
            b for a, b in zip(self.nonspammer_accuracy, self.nonspammer_blocked, strict=True) if lo <= a < hi
        ]
        return sum(band), len(band)

    def blocked_within(self, n: int) -> float:
        """Share of all spammers blocked after at most `n` gold answers."""
        return sum(1 for g in self.spammer_gold_to_block if g <= n) / self.spammers if self.spammers else 1.0


HONEST_FLOOR = 0.7  # "honest" in the figures: non-spammers at least this accurate (weak workers reach 0.75)


@cache
def _sprt_blocked(gold: sprt.Evidence, agreement: sprt.Evidence, rule: sprt.SprtRule) -> bool:
    return sprt.verdict(gold, agreement, rule).blocked


@cache
def _blocked(correct: int, answered: int, prior: scoring.Prior, rule: scoring.BlockRule) -> bool:
    if answered < rule.min_answers:
        return False
    a, b = prior.a + correct, prior.b + answered - correct
    return scoring.beta_cdf(rule.threshold, a, b) > rule.confidence


def run(spec: GoldSimSpec) -> GoldSimResult:
    """Run the crowd until every question is decided; return overhead, blocks and label quality."""
    classes = [f"c{i:03d}" for i in range(spec.n_classes)]
    crowd = Crowd.build(spec.crowd, class_keys=classes)
    rng = np.random.default_rng([spec.seed, _QUESTION_STREAM])
    q_class = rng.integers(spec.n_classes, size=spec.n_questions)
    q_truth = rng.random(spec.n_questions) < spec.positive_rate
    g_class = rng.integers(spec.n_classes, size=spec.gold_items)
    g_truth = np.arange(spec.gold_items) % 2 == 0  # balanced: an always-yes worker is right half the time

    # votes[q] = {worker index: answer}; void votes are removed (their rows stay on the platform, void-marked)
    votes: list[dict[int, bool]] = [{} for _ in range(spec.n_questions)]
    label: list[bool | None] = [None] * spec.n_questions
    open_qs: list[int] = list(range(spec.n_questions))  # oldest first, as the queue serves them
    records = [WorkerRecord(w) for w in crowd]
    gold_rng = [np.random.default_rng([spec.seed, _GOLD_STREAM, i]) for i in range(len(records))]
    for rec, r in zip(records, gold_rng, strict=True):
        rec.gold_order = [int(g) for g in r.permutation(spec.gold_items)]
    idle: set[int] = set()  # workers with nothing they may answer right now
    events = [(0.0, i) for i in range(len(records))]
    heapq.heapify(events)
    paid = gold_tasks = 0
    now_box = [0.0]
    rule = spec.sprt_rule
    # The sequential test's bookkeeping: pair statistics (shared questions, agreements) of every two workers who
    # voted on one question, what each decided question added to each voter's evidence (taken back when a block
    # re-decides it), and the workers whose evidence grew since they were last tested.
    pairs: dict[tuple[int, int], list[int]] = {}
    added: list[dict[int, sprt.Evidence]] = [{} for _ in range(spec.n_questions)]
    pending: list[int] = []

    def partners_on(i: int, q: int) -> frozenset[int]:
        """gold.sprt.partners, from the pair statistics so far, among the other voters of q."""
        assert rule is not None
        found = []
        for j in votes[q]:
            if j != i:
                n, agreed = pairs.get((min(i, j), max(i, j)), (0, 0))
                if n >= rule.partner_min_shared and agreed >= rule.partner_agreement * n:
                    found.append(j)
        return frozenset(found)

    def evidence_add(q: int) -> None:
        assert rule is not None
        for i, answer in votes[q].items():
            reference = sprt.reference_of(i, votes[q], partners_on(i, q), rule)
            if reference is not None:
                e = sprt.Evidence.one(reference, answer)
                added[q][i] = e
                records[i].agreement += e
                pending.append(i)

    def evidence_remove(q: int) -> None:
        for i, e in added[q].items():
            records[i].agreement -= e
        added[q] = {}

    def pending_test() -> None:
        assert rule is not None
        while pending:
            i = pending.pop()
            if records[i].blocked_at is None and _sprt_blocked(
                records[i].gold_evidence, records[i].agreement, rule
            ):
                block(i)

    def decide(q: int) -> None:
        yes = sum(votes[q].values())
        no = len(votes[q]) - yes
        if abs(yes - no) >= spec.lead or len(votes[q]) >= spec.vote_cap:
            label[q] = yes > no
        else:
            label[q] = None

    def block(i: int) -> None:
        rec = records[i]
        rec.blocked_at = rec.gold_answered
        rec.answers_at_block = rec.answers
        for q in range(spec.n_questions):  # void their votes and re-run the stopping rule without them
            if i in votes[q]:
                del votes[q][i]
                was = label[q]
                if rule is not None and was is not None:
                    evidence_remove(q)
                decide(q)
                if was is not None and label[q] is None:
                    open_qs.append(q)
                elif was is None and label[q] is not None:
                    open_qs.remove(q)  # the votes left decide it
                if rule is not None and label[q] is not None:
                    evidence_add(q)
        open_qs.sort()
        for j in idle:  # reopened questions may be theirs to answer
            heapq.heappush(events, (now_box[0], j))
        idle.clear()

    def next_item(i: int, rec: WorkerRecord, qualifying: bool) -> int | None:
        """The worker's next unseen item; in qualification, one whose answer keeps the attempt balanced (a
        seeded shuffle of size // 2 "no" and the rest "yes" slots, as gold.serving does)."""
        unseen = (g for g in rec.gold_order if g not in rec.gold_seen)
        if not qualifying:
            return next(unseen, None)
        size = spec.qualification_size
        slots = np.random.default_rng([spec.seed, _GOLD_STREAM, i, rec.failed_attempts]).permutation(
            np.arange(size) >= size // 2
        )
        wanted = bool(slots[min(len(rec.attempt), size - 1)])
        candidates = list(unseen)
        return next(
            (g for g in candidates if bool(g_truth[g]) == wanted), candidates[0] if candidates else None
        )

    def gold_answer(i: int, qualifying: bool) -> bool:
        """One gold task for worker i; False when the pool has nothing left they have not seen."""
        rec, w = records[i], records[i].worker
        g = next_item(i, rec, qualifying)
        if g is None:
            return False
        rec.gold_seen.add(g)
        key = classes[g_class[g]]
        truth = bool(g_truth[g])
        # Organizers pick clear-cut gold (an unambiguous example of the class, no confusable class in view):
        # only the worker's own difficulty with the class applies, capped at the base rate.
        difficulty = min(1.0, crowd.difficulty(w, key)) if spec.easy_gold else crowd.difficulty(w, key)
        right = answer_binary(w, truth, difficulty, question_key=("gold", g)) == truth
        rec.gold_answered += 1
        rec.gold_correct += right
        rec.answers += 1
        if qualifying:
            # A fixed set answered once, scored when complete; a failed attempt waits, then gets fresh items.
            rec.attempt.append(right)
            if len(rec.attempt) >= spec.qualification_size:
                if sum(rec.attempt) >= spec.qualification_pass:
                    rec.qualified = True
                else:
                    rec.failed_attempts += 1
                    rec.retry_at = now_box[0] + spec.qualification_cooldown
                rec.attempt = []
        if rule is not None:
            rec.gold_evidence += sprt.Evidence.one(truth, truth if right else not truth)
            pending.append(i)
            pending_test()
        elif _blocked(rec.gold_correct, rec.gold_answered, spec.prior, spec.rule):
            block(i)
        return True

    while events and open_qs:
        now, i = heapq.heappop(events)
        now_box[0] = now
        rec, w = records[i], records[i].worker
        if rec.blocked_at is not None:
            continue
        qual = spec.qualification_size > 0 and not rec.qualified
        if qual and rec.failed_attempts >= spec.qualification_attempts:
            continue  # out of attempts: never qualifies, never works
        if qual and now < rec.retry_at:
            heapq.heappush(events, (rec.retry_at, i))  # back when the cool-down is over
            continue
        if qual or gold_rng[i].random() < spec.gold_rate:
            if gold_answer(i, qual):
                paid += 1
                gold_tasks += 1
                rec.tasks += 1
                heapq.heappush(events, (now + answer_seconds(w, TaskKind.VERIFY), i))
                continue
            if qual:
                continue  # cannot qualify: no production work
        q = next((q for q in open_qs if i not in votes[q]), None)
        if q is None:
            idle.add(i)  # nothing left this worker may answer, until a block reopens questions
            continue
        key = classes[q_class[q]]
        truth = bool(q_truth[q])
        answer = answer_binary(w, truth, crowd.difficulty(w, key), question_key=("q", q))
        if rule is not None:
            for j, other in votes[q].items():
                stats = pairs.setdefault((min(i, j), max(i, j)), [0, 0])
                stats[0] += 1
                stats[1] += other == answer
        votes[q][i] = answer
        rec.answers += 1
        decide(q)
        if label[q] is not None:
            open_qs.remove(q)
            if rule is not None:
                evidence_add(q)
                pending_test()
        paid += 1
        rec.tasks += 1
        heapq.heappush(events, (now + answer_seconds(w, TaskKind.VERIFY), i))

    accepted = np.array([lab is True for lab in label])
    tp = int((accepted & q_truth).sum())
    spam = [r for r in records if r.worker.profile.is_spammer]
    honest = [r for r in records if not r.worker.profile.is_spammer]
    fit = [r for r in honest if r.worker.profile.accuracy >= HONEST_FLOOR]
    return GoldSimResult(
        paid_tasks=paid,
        gold_tasks=gold_tasks,
        precision=tp / int(accepted.sum()) if accepted.any() else 1.0,
        recall=tp / int(q_truth.sum()) if q_truth.any() else 1.0,
        decided=sum(1 for lab in label if lab is not None),
        spammer_gold_to_block=sorted(r.blocked_at for r in spam if r.blocked_at is not None),
        spammers=len(spam),
        spammers_blocked=sum(1 for r in spam if r.blocked_at is not None),
        honest_fit=len(fit),
        honest_fit_blocked=sum(1 for r in fit if r.blocked_at is not None),
        honest_blocked=sum(1 for r in honest if r.blocked_at is not None),
        spammers_qualified=sum(1 for r in spam if r.qualified),
        nonspammer_accuracy=tuple(r.worker.profile.accuracy for r in honest),
        nonspammer_blocked=tuple(r.blocked_at is not None for r in honest),
        answers_to_block={
            kind: (
                sum(1 for r in spam if r.worker.profile.kind == kind),
                sorted(
                    r.answers_at_block
                    for r in spam
                    if r.worker.profile.kind == kind and r.answers_at_block is not None
                ),
            )
            for kind in sorted({r.worker.profile.kind.value for r in spam})
        },
    )
