"""`s3://` candidate rows read only the buckets the dataset's organizers registered (issue 35, item 2), against a
real S3 endpoint on loopback: another tenant's bucket, the media bucket and an unrelated private bucket are never
read, and a missing key, an unregistered bucket and the media bucket fail with one text (no key-existence
oracle). Registration is organizer-only and tenant-scoped; the secret is sealed and never shown again."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from annotation.models import AuditEntry, Image
from candidates import services, sources
from candidates.models import CandidateRow, RowState, SourceBucket
from tests import factories
from tests.annotation import imagefiles
from tests.conftest import client_for
from tests.s3_fixtures import new_bucket

pytestmark = pytest.mark.django_db


def import_rows(dataset, rows: list[str], capture) -> dict[str, CandidateRow]:
    data = ("url,concept\n" + "".join(f"{url},n02084071\n" for url in rows)).encode()
    with capture(execute=True):
        job = services.candidate_import_create(dataset=dataset, name="list.csv", data=data)
    return {row.url: row for row in CandidateRow.objects.filter(job=job)}


def register(organizer, dataset, **body):
    return client_for(organizer).post(f"/api/v1/datasets/{dataset.pk}/source-buckets/", body, format="json")


OWN_KEY = {"access_key_id": "AKIAORGANIZER", "secret_access_key": "organizer-secret"}


def test_rows_read_only_registered_buckets_and_every_refusal_reads_alike(
    s3_media, s3_source, s3_endpoint, dataset, organizer, dog, django_capture_on_commit_callbacks
):
    client, registered_bucket = s3_source
    private = new_bucket(s3_endpoint, "private")  # the platform can read it; nobody registered it
    client.put_object(Bucket=registered_bucket, Key="dogs/a.jpg", Body=imagefiles.jpeg(1))
    client.put_object(Bucket=private, Key="secret.jpg", Body=imagefiles.jpeg(2))
    # Another tenant's stored image, in the media bucket.
    other = factories.DatasetFactory(name="other-tenant")
    stored = Image.objects.create(
        dataset=other, width=1, height=1, sha256="0" * 64, phash="0" * 16, original_name="b.png"
    )
    stored.file.save("b.jpg", io.BytesIO(imagefiles.jpeg(3)))
    assert register(organizer, dataset, bucket=registered_bucket, **OWN_KEY).status_code == 201

    rows = import_rows(
        dataset,
        [
            f"s3://{registered_bucket}/dogs/a.jpg",
            f"s3://{registered_bucket}/dogs/missing.jpg",
            f"s3://{private}/secret.jpg",
            f"s3://{private}/no-such-key.jpg",
            f"s3://{s3_media}/{stored.file.name}",
            "s3://no-such-bucket-anywhere/x.jpg",
        ],
        django_capture_on_commit_callbacks,
    )
    good = rows.pop(f"s3://{registered_bucket}/dogs/a.jpg")
    assert good.state == RowState.STORED
    assert Image.objects.filter(dataset=dataset).count() == 1, "only the registered bucket's object came in"
    for url, row in rows.items():
        assert row.state == RowState.FAILED
        assert row.reason == f"{url} {sources.UNREADABLE}", "missing, unregistered and media read alike"


def test_a_bucket_registered_by_another_tenant_is_not_readable_here(
    s3_source, dataset, organizer, dog, django_capture_on_commit_callbacks
):
    client, bucket = s3_source
    client.put_object(Bucket=bucket, Key="a.jpg", Body=imagefiles.jpeg(4))
    org_b = factories.user_with_roles("org-b", ("organizers",))
    theirs = factories.DatasetFactory(organizers=[org_b], name="theirs")
    assert register(org_b, theirs, bucket=bucket, **OWN_KEY).status_code == 201
    row = import_rows(dataset, [f"s3://{bucket}/a.jpg"], django_capture_on_commit_callbacks)[
        f"s3://{bucket}/a.jpg"
    ]
    assert (row.state, row.reason) == (RowState.FAILED, f"s3://{bucket}/a.jpg {sources.UNREADABLE}")
    # ... and organizer A can neither see, change nor remove B's registration.
    mine = client_for(organizer)
    assert mine.get(f"/api/v1/datasets/{theirs.pk}/source-buckets/").status_code == 404
    assert register(organizer, theirs, bucket=bucket, **OWN_KEY).status_code == 404
    source = SourceBucket.objects.get(dataset=theirs)
    assert mine.delete(f"/api/v1/datasets/{theirs.pk}/source-buckets/{source.pk}/").status_code == 404
    assert mine.delete(f"/api/v1/datasets/{dataset.pk}/source-buckets/{source.pk}/").status_code == 404
    assert SourceBucket.objects.filter(pk=source.pk).exists()


def test_registration_refuses_the_media_bucket_unapproved_endpoints_and_ungranted_platform_credentials(
    s3_media, s3_source, dataset, organizer, settings
):
    _, bucket = s3_source
    cases = {
        "media bucket": ({"bucket": s3_media, **OWN_KEY}, "media bucket"),
        "bad name": ({"bucket": "Not_A_Bucket", **OWN_KEY}, "not a valid bucket name"),
        "endpoint": (
            {"bucket": bucket, "endpoint_url": "http://169.254.169.254", **OWN_KEY},
            "not one the operator approved",
        ),
        "half a key": ({"bucket": bucket, "access_key_id": "AKIA"}, "give both"),
        "no grant": ({"bucket": bucket}, "not granted to dataset"),
    }
    for name, (body, reason) in cases.items():
        response = register(organizer, dataset, **body)
        assert response.status_code == 400, name
        assert reason in response.json()["bucket"][0], (name, response.json())
    assert not SourceBucket.objects.exists()
    # The operator grants the bucket to this dataset: the platform's credentials read it.
    settings.CROWDLABEL = {**settings.CROWDLABEL, "SOURCE_BUCKET_GRANTS": [f"{dataset.name}:{bucket}"]}
    response = register(organizer, dataset, bucket=bucket)
    assert response.status_code == 201 and response.json()["credentials"] == "granted"
    # An approved endpoint with the organizer's own key.
    settings.CROWDLABEL = {**settings.CROWDLABEL, "SOURCE_BUCKET_ENDPOINTS": ["https://s3.example.org/"]}
    response = register(
        organizer, dataset, bucket="photos-elsewhere", endpoint_url="https://s3.example.org", **OWN_KEY
    )
    assert response.status_code == 201, response.json()


def test_a_withdrawn_grant_stops_the_reads(
    s3_source, dataset, organizer, dog, settings, django_capture_on_commit_callbacks
):
    client, bucket = s3_source
    client.put_object(Bucket=bucket, Key="a.jpg", Body=imagefiles.jpeg(5))
    settings.CROWDLABEL = {**settings.CROWDLABEL, "SOURCE_BUCKET_GRANTS": [f"{dataset.name}:{bucket}"]}
    assert register(organizer, dataset, bucket=bucket).status_code == 201
    settings.CROWDLABEL = {**settings.CROWDLABEL, "SOURCE_BUCKET_GRANTS": []}
    row = import_rows(dataset, [f"s3://{bucket}/a.jpg"], django_capture_on_commit_callbacks)[
        f"s3://{bucket}/a.jpg"
    ]
    assert row.state == RowState.FAILED and row.reason.endswith(sources.UNREADABLE)


def test_the_secret_is_sealed_never_shown_and_the_registration_audited(s3_source, dataset, organizer):
    _, bucket = s3_source
    response = register(organizer, dataset, bucket=bucket, **OWN_KEY)
    assert response.status_code == 201
    body = response.json()
    assert "secret_access_key" not in body and body["credentials"] == "own"
    listed = client_for(organizer).get(f"/api/v1/datasets/{dataset.pk}/source-buckets/").json()
    assert "organizer-secret" not in str(listed)
    source = SourceBucket.objects.get()
    assert "organizer-secret" not in source.secret_sealed
    assert sources.secret_open(source.secret_sealed) == "organizer-secret"
    assert AuditEntry.objects.filter(dataset=dataset, action="candidates.source_bucket_register").exists()
    worker = factories.user_with_roles("w", ("workers",))
    assert register(worker, dataset, bucket=bucket, **OWN_KEY).status_code == 403


def test_the_command_lists_only_a_registered_bucket(s3_source, dataset, dog):
    _, bucket = s3_source
    with pytest.raises(CommandError, match="not registered for dataset"):
        call_command(
            "import_candidates", f"s3://{bucket}/x/", "--dataset", dataset.name, "--concept", dog.wnid
        )
