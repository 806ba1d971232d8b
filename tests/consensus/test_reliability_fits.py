"""The weighted estimator's Dawid-Skene fits are reused while a scope's votes grow a little, refitted after."""

from __future__ import annotations

import pytest

from consensus import reliability_fits, services, verification
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
            services.vote_record(question=q, worker=worker, answer=q.image_id % 2 == 0)
    fits = []
    monkeypatch.setattr(
        reliability_fits,
        "fit_dawid_skene",
        lambda *a, **k: fits.append(len(a[0])) or _fit(*a, **k),
    )
    first = reliability_fits.reliability_for("image_verify", concept.pk)
    assert reliability_fits.reliability_for("image_verify", concept.pk) is first and fits == [16]
    services.vote_record(question=questions[0], worker=workers[4], answer=True)  # 1 new vote of 16: 6% > 5%
    assert reliability_fits.reliability_for("image_verify", concept.pk) is not first and fits == [16, 17]


_fit = reliability_fits.fit_dawid_skene
