"""The weighted estimator's Dawid-Skene fits are reused while a scope's votes grow a little, refitted after."""

from __future__ import annotations

import pytest
from django.db import OperationalError
from django.db.models.query import QuerySet

from consensus import engine, estimates, reliability_fits, verification
from consensus.models import ConsensusSettings, Question, QuestionRole

from .conftest import make_images, make_workers

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_fit_is_reused_until_the_votes_grow_by_the_refit_share(dataset, concept, monkeypatch):
    monkeypatch.setattr(reliability_fits, "CACHE_MIN_VOTES", 1)
    monkeypatch.setattr(reliability_fits, "_fits", {})
    ConsensusSettings.objects.create(
        dataset=dataset,
        calibration_min=4,
        calibration_max=4,
        calibration_votes=5,
        vote_cap=8,
        estimator="dynamic",
    )
    make_images(dataset, 4)
    verification.verification_queue(dataset=dataset, concept=concept)
    questions = list(Question.objects.filter(role=QuestionRole.CALIBRATION))
    workers = make_workers(5)
    for worker in workers[:4]:
        for q in questions:
            engine.vote_record(question=q, worker=worker, answer=q.image_id % 2 == 0)
    fits = []
    monkeypatch.setattr(
        reliability_fits,
        "fit_dawid_skene",
        lambda *a, **k: fits.append(len(a[0])) or _fit(*a, **k),
    )
    first = reliability_fits.reliability_for("image_verify", concept.pk)
    assert reliability_fits.reliability_for("image_verify", concept.pk) is first and fits == [16]
    engine.vote_record(question=questions[0], worker=workers[4], answer=True)  # 1 new vote of 16: 6% > 5%
    assert reliability_fits.reliability_for("image_verify", concept.pk) is not first and fits == [16, 17]


_fit = reliability_fits.fit_dawid_skene


def test_a_connection_lost_while_weighing_a_vote_is_raised_as_a_database_error(dataset, concept, monkeypatch):
    """The soak (bench/soak.py) met 500s 'int() argument must be ... not QuerySet': numpy turned the database
    error of a killed connection, raised while it read a queryset, into a TypeError, which the request's
    lost-connection handling (retry, else 503) does not recognise."""
    monkeypatch.setattr(reliability_fits, "_fits", {})
    ConsensusSettings.objects.create(
        dataset=dataset, calibration_min=4, calibration_max=4, calibration_votes=5, vote_cap=8
    )
    make_images(dataset, 4)
    verification.verification_queue(dataset=dataset, concept=concept)
    questions = list(Question.objects.filter(role=QuestionRole.CALIBRATION))
    for worker in make_workers(3):
        for q in questions:
            engine.vote_record(question=q, worker=worker, answer=q.image_id % 2 == 0)
    fetch = QuerySet._fetch_all

    def connection_lost_on_question_ids(self):
        if self.model is Question and self._fields == ("pk",):
            raise OperationalError("server closed the connection unexpectedly")
        return fetch(self)

    monkeypatch.setattr(QuerySet, "_fetch_all", connection_lost_on_question_ids)
    with pytest.raises(OperationalError):
        estimates.weighted_estimate(questions[0])
