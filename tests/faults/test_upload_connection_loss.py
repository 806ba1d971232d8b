"""An upload whose database connection is lost between two files (a killed backend, a restarted server) goes
on with the next files on a fresh connection instead of answering 503 after storing some of them: the files
already stored are kept, the file under way is stored once (its transaction rolled back with the connection,
or committed and then found stored), and the answer names them all."""

from __future__ import annotations

import psycopg
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from annotation import ingest
from annotation.models import Image
from tests.annotation import imagefiles
from tests.conftest import client_for

from .conftest import database_url_of_the_test_database

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def kill_own_backend() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    with psycopg.connect(database_url_of_the_test_database(), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_an_upload_losing_its_connection_before_a_file_stores_every_file_once_and_answers_201(
    monkeypatch, organizer, dataset
):
    store, calls = ingest._store, []

    def store_after_a_lost_connection(*args):
        calls.append(args[1].name)
        if len(calls) == 2:  # the second file: the backend is killed before its transaction
            kill_own_backend()
        return store(*args)

    monkeypatch.setattr(ingest, "_store", store_after_a_lost_connection)
    files = [imagefiles.jpeg(seed) for seed in (11, 12, 13)]
    response = client_for(organizer).post(
        f"/api/v1/datasets/{dataset.pk}/images/",
        {"files": [SimpleUploadedFile(f"{i}.jpg", data) for i, data in enumerate(files)]},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert [s["name"] for s in body["stored"]] == ["0.jpg", "1.jpg", "2.jpg"] and body["rejected"] == []
    assert Image.objects.filter(dataset=dataset).count() == 3
    assert calls == ["0.jpg", "1.jpg", "1.jpg", "2.jpg"], "the file under way was stored again, once"
