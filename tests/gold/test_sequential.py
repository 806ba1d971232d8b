"""The sequential test on the platform (gold.quality, gold.services.worker_quality_check): a worker voting only
on ordinary questions is tested against the other voters of each decided question, through the outbox message
the decision records; a spammer is blocked (votes voided, questions repaired), an honest worker is not, and a
colluding pair is blocked although its members agree with each other."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from consensus import engine
from consensus.models import Question, QuestionState, VoteVoid
from gold import quality, services, sprt
from gold.models import Block, GoldSettings, ScoreKind, WorkerScore
from outbox.models import Message
from outbox.services import relay
from tests.conftest import client_for

from .conftest import make_images, make_workers, production_questions

pytestmark = pytest.mark.django_db


def deliver() -> None:
    """What the relay does in every deployment: run the recorded messages (in-process here, no broker)."""
    for _ in range(5):
        if not relay(now=timezone.now() + timedelta(minutes=5))["sent"]:
            return


def vote_until_decided(question: Question, first: dict, honest: list, truth: bool, rng) -> None:
    """`first` ({worker: answer}) votes first; then honest workers, right 90% of the time, until it is decided.
    (Workers who are always right agree on everything, and the test takes any two voters who agree on 95% of
    at least 8 shared questions for partners, whose votes are no reference for each other.)"""
    for worker, answer in first.items():
        engine.vote_record(question=question, worker=worker, answer=answer)
    for worker in honest:
        question.refresh_from_db()
        if question.state != QuestionState.OPEN:
            return
        engine.vote_record(
            question=question, worker=worker, answer=truth if rng.random() < 0.9 else not truth
        )


def setup(dataset, concept, n: int, block_rule: str = "sequential"):
    GoldSettings.objects.create(
        dataset=dataset, qualification_size=0, qualification_pass=0, rate=0.0, block_rule=block_rule
    )
    return production_questions(dataset, concept, make_images(dataset, n), vote_cap=8)


@pytest.mark.parametrize("block_rule", ["sequential", "posterior"])
def test_a_spammer_voting_only_on_ordinary_questions_is_blocked_and_an_honest_one_is_not(
    dataset, concept, block_rule
):
    questions = setup(dataset, concept, 24, block_rule)
    spammer, honest_first, *honest = make_workers(8)
    rng = np.random.default_rng(0)
    for i, q in enumerate(questions):
        truth = i % 2 == 0
        # The spammer says yes to everything; an honest worker (always right) votes first on every question too.
        vote_until_decided(q, {spammer: True, honest_first: truth}, honest, truth, rng)
        deliver()
    blocked = set(Block.objects.filter(dataset=dataset).values_list("worker_id", flat=True))
    if block_rule == "posterior":
        assert blocked == set(), "gold alone never sees a worker who answers no gold"
        return
    assert blocked == {spammer.pk}
    block = Block.objects.get(worker=spammer)
    assert block.kind == ScoreKind.SEQUENTIAL and block.llr >= sprt.SprtRule().log_threshold
    assert VoteVoid.objects.filter(vote__worker=spammer).exists(), "the block's repair voided their votes"
    assert Message.objects.filter(task_name="gold.tasks.gold_quality_update").exists()
    row = WorkerScore.objects.get(worker=honest_first, dataset=dataset, kind=ScoreKind.SEQUENTIAL)
    assert row.answered >= 5 and row.correct == row.answered and row.llr < 0


def test_a_colluding_pair_is_blocked_though_its_members_agree(dataset, concept):
    # The posterior rule first (nothing blocks), to read the evidence of the whole run; then the sequential one.
    questions = setup(dataset, concept, 30, block_rule="posterior")
    a, b, *honest = make_workers(9)
    rng = np.random.default_rng(1)
    for i, q in enumerate(questions):
        truth = i % 2 == 0
        together = bool(rng.random() < 0.5)  # the pair's shared coin: independent of the truth
        vote_until_decided(q, {a: together, b: together}, honest, truth, rng)
    deliver()
    assert not Block.objects.exists()
    trusting = sprt.SprtRule(partner_min_shared=10**6)  # nobody is anybody's partner
    for worker in (a, b):
        careful, naive = (
            quality.worker_evidence(worker.pk, dataset.pk),
            quality.worker_evidence(worker.pk, dataset.pk, trusting),
        )
        # Where one honest vote and the pair decided a question the pair got right, the partner made the
        # reference: counted as agreement without the rule, no evidence with it.
        assert naive.agreement.right > careful.agreement.right
        assert careful.llr > naive.llr
    GoldSettings.objects.filter(dataset=dataset).update(block_rule="sequential")
    blocked = sum(services.worker_quality_check(worker=w, dataset_id=dataset.pk) for w in (a, b, *honest))
    assert blocked == 2
    assert set(Block.objects.filter(dataset=dataset).values_list("worker_id", flat=True)) == {a.pk, b.pk}


def test_organizers_choose_the_block_rule_and_a_wrong_one_is_refused(organizer, dataset):
    client = client_for(organizer)
    url = f"/api/v1/datasets/{dataset.pk}/gold-settings/"
    assert client.get(url).json()["block_rule"] == "sequential"
    r = client.patch(url, {"block_rule": "posterior"}, format="json")
    assert r.status_code == 200 and GoldSettings.objects.get(dataset=dataset).block_rule == "posterior"
    r = client.patch(url, {"block_rule": "gut feeling"}, format="json")
    assert r.status_code == 400 and "block_rule" in r.json()
