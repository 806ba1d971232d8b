"""The migration that gave confusable pairs a dataset copies each shared pair (with its note) to every dataset
whose classes include both of its concepts, and drops the shared row."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from review.models import ConfusablePair
from tests import factories

BEFORE = [("review", "0003_review_decision_absent")]
AFTER = [("review", "0004_confusable_pairs_per_dataset")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_shared_pairs_are_copied_to_each_dataset_that_has_both_classes():
    seal, otter, dog, cat = (factories.ConceptFactory(name=n) for n in ("seal", "otter", "dog", "cat"))
    a, b, c = (factories.DatasetFactory(name=n) for n in ("A-main", "B-main", "C-main"))
    a.concepts.set([seal, otter])
    b.concepts.set([seal, otter, dog])
    c.concepts.set([seal, dog])
    try:
        old = migrate(BEFORE).get_model("review", "ConfusablePair")
        lo, hi = sorted((seal.pk, otter.pk))
        old.objects.create(concept_a_id=lo, concept_b_id=hi, note="wet fur")
        lo, hi = sorted((otter.pk, dog.pk))
        old.objects.create(concept_a_id=lo, concept_b_id=hi, note="only B has both")
        lo, hi = sorted((seal.pk, dog.pk))
        old.objects.create(concept_a_id=lo, concept_b_id=hi, note="B and C")
        lo, hi = sorted((cat.pk, dog.pk))
        old.objects.create(concept_a_id=lo, concept_b_id=hi, note="no dataset has a cat")
        migrate(AFTER)
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    rows = sorted(ConfusablePair.objects.values_list("dataset__name", "note"))
    assert rows == [
        ("A-main", "wet fur"),
        ("B-main", "B and C"),
        ("B-main", "only B has both"),
        ("B-main", "wet fur"),
        ("C-main", "B and C"),
    ]
