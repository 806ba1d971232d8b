"""The same predictions file imported from four connections at once (a client retrying while the first request
still runs) is stored once and fails none: the unique content digest decides, the others answer that set."""

from __future__ import annotations

import json
import threading

import pytest

from predictions import services
from predictions.models import BoxPrediction, PredictionSet
from tests import factories
from tests.threads import in_thread
from tests.waiting import GENEROUS_SECONDS

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

IMPORTERS = 4


def test_one_file_imported_from_four_connections_at_once_is_stored_once_and_fails_none():
    dataset = factories.DatasetFactory(name="race")
    concept = factories.ConceptFactory()
    images = [factories.ImageFactory(dataset=dataset, width=100, height=100) for _ in range(20)]
    rows = [
        {"image_id": image.pk, "category_id": concept.pk, "bbox": [i, i, 10, 10], "score": 0.5}
        for image in images
        for i in range(50)
    ]
    data = json.dumps(rows).encode()
    start = threading.Barrier(IMPORTERS)
    answers, errors = [], []

    @in_thread
    def load():
        try:
            start.wait(GENEROUS_SECONDS)
            prediction_set, created = services.prediction_file_import(dataset=dataset, data=data)
            answers.append((prediction_set.pk, created))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(IMPORTERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(GENEROUS_SECONDS)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert sorted(created for _, created in answers) == [False] * (IMPORTERS - 1) + [True]
    assert len({pk for pk, _ in answers}) == 1
    assert PredictionSet.objects.count() == 1 and BoxPrediction.objects.count() == len(rows)
