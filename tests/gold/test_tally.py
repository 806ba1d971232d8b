"""The gold tally: every lease learns which (dataset, kind) pairs need qualification from a kept count of gold
items, not by counting every tenant's items. The count is kept by the services that add items (all or none),
rebuilt by `counters_recount` for items loaded around them and by the admin for the items it adds or deletes,
and filled by its migration from existing items."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.counters import counters_recount
from consensus.models import QuestionKind
from gold.items import GoldInvalid, gold_items_import_csv
from gold.models import GoldItem, GoldTally
from gold.serving import gold_context
from gold.tally import gold_tally_expected
from tests import factories

from .conftest import gold_for, make_images, make_workers, small_qualification


def stored(dataset) -> dict[str, int]:
    return dict(GoldTally.objects.filter(dataset=dataset).values_list("kind", "items"))


@pytest.mark.django_db
def test_items_added_through_the_services_are_counted_per_dataset_and_kind(dataset, concept):
    images = make_images(dataset, 6)
    gold_for(dataset, concept, images[:4])
    csv = "kind,concept,image,answer\n" + "".join(
        f"box_coverage,{concept.wnid},{image.pk},yes\n" for image in images[4:]
    )
    gold_items_import_csv(dataset=dataset, text=csv)
    other = factories.DatasetFactory()
    gold_for(other, concept, make_images(other, 1))

    assert stored(dataset) == {QuestionKind.IMAGE_VERIFY: 4, QuestionKind.BOX_COVERAGE: 2}
    assert {(kind,): {"items": n} for kind, n in stored(dataset).items()} == gold_tally_expected(dataset.pk)
    assert stored(other) == {QuestionKind.IMAGE_VERIFY: 1}


@pytest.mark.django_db
def test_a_refused_batch_of_items_counts_nothing(dataset, concept):
    images = make_images(dataset, 3)
    gold_for(dataset, concept, images[:1])
    with pytest.raises(GoldInvalid):
        gold_for(dataset, concept, images)  # the first image's item exists: the whole batch is refused
    assert GoldItem.objects.filter(dataset=dataset).count() == 1
    assert stored(dataset) == {QuestionKind.IMAGE_VERIFY: 1}


@pytest.mark.django_db
def test_a_lease_reads_which_pairs_are_gated_from_the_tally_and_never_counts_items(dataset, concept):
    small_qualification(dataset)  # 8 items gate the pair
    images = make_images(dataset, 8)
    (worker,) = make_workers(1)
    gold_for(dataset, concept, images[:7])
    assert gold_context(worker).gated == frozenset()
    gold_for(dataset, concept, images[7:])
    assert gold_context(worker).gated == {(dataset.pk, QuestionKind.IMAGE_VERIFY)}

    with CaptureQueriesContext(connection) as queries:
        gold_context(worker)
    item_table = GoldItem._meta.db_table
    assert not [q["sql"] for q in queries.captured_queries if item_table in q["sql"]]


@pytest.mark.django_db
def test_counters_recount_counts_items_loaded_around_the_services(dataset, concept):
    small_qualification(dataset)
    images = make_images(dataset, 9)
    (worker,) = make_workers(1)
    gold_for(dataset, concept, images[:1])
    GoldItem.objects.bulk_create(
        GoldItem(dataset=dataset, kind=QuestionKind.IMAGE_VERIFY, concept=concept, image=image, answer=True)
        for image in images[1:]
    )
    assert stored(dataset) == {QuestionKind.IMAGE_VERIFY: 1}
    assert gold_context(worker).gated == frozenset()

    assert counters_recount(dataset.pk) >= 1
    assert stored(dataset) == {QuestionKind.IMAGE_VERIFY: 9}
    assert gold_context(worker).gated == {(dataset.pk, QuestionKind.IMAGE_VERIFY)}
    assert counters_recount(dataset.pk) == 0, "nothing left to repair"


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_the_tally_from_the_items_already_there(dataset, concept):
    gold_for(dataset, concept, make_images(dataset, 3))
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    executor.migrate([("gold", "0006_kind_choices_with_binary_vote")])  # the tally table is dropped
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(leaves)  # and filled again from the items
    assert stored(dataset) == {QuestionKind.IMAGE_VERIFY: 3}


@pytest.mark.django_db
def test_items_added_and_deleted_in_the_admin_are_counted_too(dataset, concept):
    image = make_images(dataset, 1)[0]
    get_user_model().objects.create_superuser("root", "root@example.org", "root-pass-123")
    client = Client()
    assert client.login(username="root", password="root-pass-123")
    added = client.post(
        "/admin/gold/golditem/add/",
        {
            "dataset": dataset.pk,
            "kind": QuestionKind.IMAGE_VERIFY,
            "concept": concept.pk,
            "image": image.pk,
            "answer": "on",
            "explanation": "",
            "source": "organizer",
        },
    )
    assert added.status_code == 302, added.content.decode()[-2000:]
    item = GoldItem.objects.get()
    assert item.task_id is not None
    assert stored(dataset) == {QuestionKind.IMAGE_VERIFY: 1}

    deleted = client.post(f"/admin/gold/golditem/{item.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302
    assert not GoldItem.objects.exists()
    assert stored(dataset) == {QuestionKind.IMAGE_VERIFY: 0}
