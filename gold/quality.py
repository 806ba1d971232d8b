"""Worker quality from every answer (gold.sprt's sequential test) on the platform: the evidence read from the
worker's gold answers and votes, their `sequential` score row, and the consensus subscriber that has a decided
question's voters tested again (gold.services.worker_quality_check blocks)."""

from __future__ import annotations

import math
from collections import defaultdict

from consensus import events as consensus_events
from consensus.models import Question, QuestionState, Vote
from outbox.services import message_enqueue, message_record_later

from . import sprt
from .models import GoldAnswer, ScoreKind, WorkerScore

QUALITY_TASK = "gold.tasks.gold_quality_update"
RULE = sprt.SprtRule()
DECIDED = (QuestionState.ACCEPTED, QuestionState.REJECTED)


def worker_evidence(worker_id: int, dataset_id: int, rule: sprt.SprtRule = RULE) -> sprt.SprtVerdict:
    """The test over everything the worker answered in the dataset, read from the rows: gold answers (a
    qualification set's included), and every valid vote (not void, not withdrawn) they gave on a question there,
    with every valid vote on those questions (agreement on the decided ones; partners from all of them)."""
    gold = [
        (item_answer, item_answer if correct else not item_answer)
        for item_answer, correct in GoldAnswer.objects.filter(worker_id=worker_id, dataset_id=dataset_id)
        .order_by("id")
        .values_list("serving__item__answer", "correct")
    ]
    valid = Vote.objects.filter(void__isnull=True, withdrawn=False)
    # The questions they voted on, as a subquery: a worker with thousands of votes needs no list of ids.
    theirs = valid.filter(worker_id=worker_id, question__dataset_id=dataset_id).values("question_id")
    votes: dict[int, dict[int, bool]] = defaultdict(dict)
    for question_id, voter, answer in (
        valid.filter(question_id__in=theirs)
        .order_by("question_id", "id")
        .values_list("question_id", "worker_id", "answer")
    ):
        votes[question_id][voter] = answer
    decided = set(Question.objects.filter(pk__in=theirs, state__in=DECIDED).values_list("pk", flat=True))
    return sprt.worker_verdict(
        worker_id,
        gold=gold,
        decided=[v for q, v in votes.items() if q in decided],
        voted=list(votes.values()),
        rule=rule,
    )


def p_uninformative(llr: float) -> float:
    """Lambda / (1 + Lambda): P(the answers carry no information | evidence) at even prior odds."""
    return 1.0 / (1.0 + math.exp(-llr)) if llr > -700 else 0.0


def sequential_score_write(*, worker, dataset_id: int, rule: sprt.SprtRule = RULE) -> sprt.SprtVerdict:
    """Rewrite the worker's `sequential` score row of the dataset from their evidence; the verdict says whether
    the test blocks them (gold.services.worker_quality_check acts on it)."""
    verdict = worker_evidence(worker.pk, dataset_id, rule)
    evidence = verdict.gold + verdict.agreement
    share = evidence.right / evidence.answers if evidence.answers else 0.0
    WorkerScore.objects.update_or_create(
        worker=worker,
        dataset_id=dataset_id,
        kind=ScoreKind.SEQUENTIAL,
        defaults={
            "answered": evidence.answers,
            "correct": evidence.right,
            "mean": share,
            "lower": share,
            "p_below": p_uninformative(verdict.llr),
            "llr": verdict.llr,
        },
    )
    return verdict


def question_decided(event: consensus_events.QuestionDecided) -> None:
    """Consensus subscriber: a question was accepted or rejected, so its voters have new agreement evidence.
    Tested after the response, by a background task: with a submit's writes the call is recorded among them (no
    round trip of its own; the outbox relay delivers it), otherwise in the decision's transaction, sent when it
    commits (a block's repair, a reviewer's verdict)."""
    if event.question.state not in DECIDED:
        return
    args = (event.question.pk,)
    if event.writes is not None:
        message_record_later(event.writes, QUALITY_TASK, args, dataset_id=event.question.dataset_id)
    else:
        message_enqueue(QUALITY_TASK, args, dataset_id=event.question.dataset_id)
