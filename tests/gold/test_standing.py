"""A worker is told why tasks stopped coming (issue: a worker who failed qualification was never told, nor when
they might retry): `GET /api/v1/me/standing` lists the failed attempts that still hold tasks back, with the
time of the next attempt or none left, and the datasets the worker is blocked in; only their own."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from gold.models import Block
from tests.conftest import client_for

from .conftest import gold_for, make_images, make_workers, production_questions, small_qualification
from .test_qualification import answer_qualification

pytestmark = pytest.mark.django_db


def standing(worker) -> dict:
    reply = client_for(worker.user).get("/api/v1/me/standing")
    assert reply.status_code == 200, reply.content
    return reply.json()


def test_a_failed_qualification_is_told_with_when_to_retry_then_that_no_attempt_is_left(dataset, concept):
    images = make_images(dataset, 40)
    production_questions(dataset, concept, images[:10])
    answers = {g.image_id: g.answer for g in gold_for(dataset, concept, images[10:])}
    small_qualification(
        dataset,
        qualification_size=7,
        qualification_pass=7,
        qualification_attempts=2,
        qualification_cooldown=600,
    )
    w, other = make_workers(2)
    assert standing(w) == {"qualifications_failed": [], "blocked": [], "held_back": []}

    answer_qualification(w, answers, [True] * 6 + [False])
    (failed,) = standing(w)["qualifications_failed"]
    assert (failed["dataset_id"], failed["kind"], failed["failed_attempts"], failed["attempts_allowed"]) == (
        dataset.pk,
        "image_verify",
        1,
        2,
    )
    assert failed["retry_at"] is not None
    assert "You did not pass the qualification for image checks" in failed["message"]
    assert "you may try again from" in failed["message"] and dataset.name in failed["message"]
    assert standing(other) == {"qualifications_failed": [], "blocked": [], "held_back": []}, (
        "only one's own standing"
    )

    answer_qualification(w, answers, [True] * 6 + [False], now=timezone.now() + timedelta(seconds=601))
    (failed,) = standing(w)["qualifications_failed"]
    assert failed["retry_at"] is None and failed["failed_attempts"] == 2
    assert "no attempt is left" in failed["message"]


def test_a_block_is_told_without_naming_the_evidence(dataset):
    (w,) = make_workers(1)
    Block.objects.create(worker=w, dataset=dataset, kind="all", answered=25, correct=14, p_below=0.99)
    body = standing(w)
    assert [b["dataset_id"] for b in body["blocked"]] == [dataset.pk]
    assert "too often wrong" in body["blocked"][0]["message"]


def test_only_workers_have_a_standing(organizer):
    assert client_for(organizer).get("/api/v1/me/standing").status_code == 403


def _out_of_standing(monkeypatch, out, good):
    import numpy as np

    from consensus import standing_lease
    from consensus.standing import WITHHOLD_MIN_GOOD, Standing

    ids = np.array(sorted([out.pk, good.pk, *(good.pk + 1000 + i for i in range(WITHHOLD_MIN_GOOD))]))
    kept = Standing(ids, np.where(ids == out.pk, 0.05, 0.7), votes=np.full(ids.size, 40))
    monkeypatch.setattr(standing_lease, "cached_standing", lambda kind: (kept, 1234))


def test_a_worker_out_of_good_standing_on_verification_is_told_it_is_offered_less(monkeypatch, dataset):
    from consensus import standing_lease
    from tests import factories

    out, good = make_workers(2)
    _out_of_standing(monkeypatch, out, good)
    assert standing(out)["held_back"] == [], "no verification question waits: nothing is withheld"
    factories.TaskFactory(dataset=dataset, kind="question", topic="image_verify")
    (held,) = standing(out)["held_back"]
    assert held["kind"] == "image_verify"
    assert held["message"].startswith(
        "Fewer image checks (does this image show ...?) are offered to you for now"
    )
    assert standing(good)["held_back"] == []
    monkeypatch.setattr(standing_lease, "cached_standing", lambda kind: None)  # a process keeping no fit
    assert standing(out)["held_back"] == [], "told only what this process's leases do"


def test_a_worker_is_not_told_of_questions_withheld_nowhere_they_can_reach(monkeypatch, dataset):
    """Only Algorithm 1's verification waits (nothing withheld there), or the only verification waiting is in a
    dataset the worker's grants keep them out of: they are not told fewer image checks come."""
    from annotation.models import DatasetGrant
    from consensus.models import Question, QuestionKind
    from tests import factories

    out, good = make_workers(2)
    _out_of_standing(monkeypatch, out, good)
    leaf = factories.TaskFactory(dataset=dataset, kind="question", topic="image_verify")
    inner = factories.TaskFactory(dataset=dataset, kind="question", topic="hierarchy", image=leaf.image)
    Question.objects.create(
        kind=QuestionKind.HIERARCHY,
        dataset=dataset,
        concept=factories.ConceptFactory(),
        image=leaf.image,
        task=inner,
    )
    assert standing(out)["held_back"] == [], "Algorithm 1's leaves reach every worker"

    elsewhere = factories.TaskFactory(kind="question", topic="image_verify")
    assert len(standing(out)["held_back"]) == 1
    DatasetGrant.objects.create(worker=out, dataset=dataset)  # an in-house member scoped to `dataset`
    assert standing(out)["held_back"] == [], f"dataset {elsewhere.dataset_id} is out of their reach"
