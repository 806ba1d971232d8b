"""Loading one hierarchy file from several connections at once (two simulator runs uploading theirs) stores it
once and fails none of them: the loads take turns, and each after the first is the no-op a repeated load is
(an IntegrityError on the unique name and version, or on a concept's wnid, before)."""

from __future__ import annotations

import threading

import pytest

from hierarchy.fixture import load_fixture
from hierarchy.models import Concept, Hierarchy
from hierarchy.services import hierarchy_load
from tests.threads import in_thread
from tests.waiting import GENEROUS_SECONDS

from .test_loader import FIXTURES

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

LOADERS = 4


def test_the_same_file_loaded_from_four_connections_at_once_is_stored_once_and_fails_none():
    fixture = load_fixture(FIXTURES / "voc20.json")
    start = threading.Barrier(LOADERS)
    created, errors = [], []

    @in_thread
    def load():
        try:
            start.wait(GENEROUS_SECONDS)
            created.append(hierarchy_load(fixture).created)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(LOADERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(GENEROUS_SECONDS)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert sorted(created) == [False] * (LOADERS - 1) + [True]
    assert Hierarchy.objects.count() == 1
    assert Concept.objects.filter(wnid="n02084071").count() == 1


@pytest.mark.parametrize("renamed", [False, True], ids=["unchanged", "renamed"])
def test_loading_a_hierarchy_never_waits_on_the_key_share_lock_a_vote_holds_on_its_concept(renamed):
    """A vote, label or box naming a concept holds a key-share lock on the concept's row (its foreign key's check)
    until it commits. Loading the hierarchy again meanwhile must not wait on it: `update_or_create` locked every
    concept FOR UPDATE, which waits for that lock, and the soak's concurrent runs deadlocked on it."""
    import psycopg
    from django.db import connection

    from hierarchy.services import concepts_upsert
    from tests.config.test_celery_worker import database_url_of_the_test_database

    concepts_upsert([{"wnid": "n02084071", "name": "dog", "gloss": "a dog", "parents": []}])
    with psycopg.connect(database_url_of_the_test_database()) as voter:
        voter.execute("SELECT id FROM hierarchy_concept WHERE wnid = 'n02084071' FOR KEY SHARE")
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '3s'")
        try:
            node = {"wnid": "n02084071", "name": "domestic dog" if renamed else "dog", "gloss": "a dog"}
            concepts_upsert([{**node, "parents": []}])
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = 0")
        voter.rollback()
    assert Concept.objects.get(wnid="n02084071").name == ("domestic dog" if renamed else "dog")
