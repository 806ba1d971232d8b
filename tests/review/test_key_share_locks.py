"""Row locks outside a submit never wait on the key-share lock a concurrent insert holds on the row it references.

A transaction that inserted a final label, a question or a vote holds `FOR KEY SHARE` on the image, dataset and
concept it names until it commits (its foreign keys' check). A lock taken `FOR UPDATE` waits for that, and when
its own transaction then waits for the inserter (an `INSERT ... ON CONFLICT` of the same final label), PostgreSQL
reports a deadlock: the soak's shape. These lockers change no key, so they take `FOR NO KEY UPDATE`, which
a key-share does not block (docs/architecture.md, "Lock order")."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection, transaction

from annotation.models import Dataset, Image
from organize.dataset_archive import dataset_archive
from organize.near_duplicates import near_duplicate_decide
from review.scan import lock_images
from tests import factories
from tests.config.test_celery_worker import database_url_of_the_test_database

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _while_a_key_share_is_held(table: str, pk: int, locker) -> None:
    """Run `locker()` while another connection holds FOR KEY SHARE on the row; fail if it has to wait 3 s."""
    with psycopg.connect(database_url_of_the_test_database()) as inserter:
        inserter.execute(f"SELECT id FROM {table} WHERE id = %s FOR KEY SHARE", [pk])
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '3s'")
        try:
            locker()
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = 0")
        inserter.rollback()


def test_the_overlap_scan_locks_images_without_waiting_on_a_label_insert_naming_them():
    image = factories.ImageFactory()

    def scan_locks():
        with transaction.atomic():
            lock_images([image.pk])

    _while_a_key_share_is_held(Image._meta.db_table, image.pk, scan_locks)


def test_archiving_a_dataset_does_not_wait_on_an_insert_naming_it():
    dataset = factories.DatasetFactory()
    organizer = factories.user_with_roles("org-locks", ("organizer",))
    _while_a_key_share_is_held(
        Dataset._meta.db_table, dataset.pk, lambda: dataset_archive(dataset, actor=organizer)
    )
    dataset.refresh_from_db()
    assert dataset.archived_at is not None


def test_a_near_duplicate_verdict_locks_its_image_without_waiting_on_an_insert_naming_it():
    dataset = factories.DatasetFactory()
    organizer = factories.user_with_roles("org-verdict-locks", ("organizer",))
    image = factories.ImageFactory(dataset=dataset, near_duplicate_of=factories.ImageFactory(dataset=dataset))
    _while_a_key_share_is_held(
        Image._meta.db_table,
        image.pk,
        lambda: near_duplicate_decide(
            dataset=dataset, image_id=image.pk, decision="dismiss", actor=organizer
        ),
    )
    image.refresh_from_db()
    assert image.near_duplicate_of_id is None


def test_freezing_a_split_version_does_not_wait_on_an_insert_naming_it():
    from benchmark.models import SplitVersion
    from benchmark.services import split_version_freeze

    version = SplitVersion.objects.create(
        dataset=factories.DatasetFactory(), number=1, seed=1, ratios={"train": 1.0}, manifest={}
    )
    _while_a_key_share_is_held(
        SplitVersion._meta.db_table, version.pk, lambda: split_version_freeze(version=version)
    )
    version.refresh_from_db()
    assert version.frozen
