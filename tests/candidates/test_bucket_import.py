"""Candidates from an s3://bucket/prefix (a real S3 endpoint on loopback): every object becomes a row of the
concept with source "bucket", good images are stored once into the pool, bad objects are reported by reason, a
re-run adds nothing, and a missing bucket is refused naming it."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Image
from candidates import services, sources
from candidates.models import Candidate, CandidateImport, RowState
from tests.annotation import imagefiles

pytestmark = pytest.mark.django_db


def test_a_bucket_prefix_becomes_a_pool_of_the_concept_with_bad_objects_reported(
    s3_media, s3_source, dataset, dog, django_capture_on_commit_callbacks
):
    client, bucket = s3_source
    sources.source_register(dataset=dataset, bucket=bucket, access_key_id="AKIA", secret_access_key="s")
    for key, data in {
        "dogs/a.jpg": imagefiles.jpeg(11),
        "dogs/b.png": imagefiles.encode(imagefiles.picture(12), "PNG"),
        "dogs/notes.txt": imagefiles.TEXT,
        "cats/c.jpg": imagefiles.jpeg(13),
    }.items():
        client.put_object(Bucket=bucket, Key=key, Body=data)

    def run():
        with django_capture_on_commit_callbacks(execute=True):
            job = services.candidate_import_bucket(
                dataset=dataset, url=f"s3://{bucket}/dogs/", concept=dog.wnid, query="bucket dogs"
            )
        job.refresh_from_db()
        return job

    job = run()
    rows = {r.url: r for r in job.rows.all()}
    assert set(rows) == {f"s3://{bucket}/dogs/{k}" for k in ("a.jpg", "b.png", "notes.txt")}
    assert {r.source for r in rows.values()} == {"bucket"}
    assert rows[f"s3://{bucket}/dogs/notes.txt"].state == RowState.FAILED
    assert "not an image" in rows[f"s3://{bucket}/dogs/notes.txt"].reason
    assert (job.stored, job.failed) == (2, 1)
    pool = Candidate.objects.filter(concept=dog)
    assert pool.count() == 2 and set(pool.values_list("query", flat=True)) == {"bucket dogs"}
    assert Image.objects.filter(dataset=dataset).count() == 2

    again = run()
    assert again.stored == 0 and again.skipped == 2  # a re-run fetches and adds nothing
    assert Image.objects.filter(dataset=dataset).count() == 2 and pool.count() == 2


def test_a_missing_bucket_is_refused_naming_it_and_records_nothing(s3_source, dataset, dog):
    sources.source_register(
        dataset=dataset, bucket="no-such-bucket", access_key_id="AKIA", secret_access_key="s"
    )
    with pytest.raises(services.ImportRefused, match="no-such-bucket"):
        services.candidate_import_bucket(dataset=dataset, url="s3://no-such-bucket/x/", concept=dog.wnid)
    with pytest.raises(CommandError, match="no-such-bucket"):
        call_command(
            "import_candidates", "s3://no-such-bucket/x/", "--dataset", dataset.name, "--concept", dog.wnid
        )
    assert not CandidateImport.objects.exists()
