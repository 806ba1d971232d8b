"""The whole storage path on S3 (the project's own S3 storage on a real S3 endpoint on loopback): uploaded images
land in the bucket, the worker page's and the review page's image URLs give back those bytes, and an export is
written to the bucket and downloaded through its endpoint."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import urllib.request
import zipfile
from urllib.parse import urlsplit

import pytest
from django.core.files import File
from django.core.management import call_command
from storages.backends.s3 import S3Storage

from annotation.imagerefs import image_ref
from annotation.models import Box, BoxState, Image
from config.csp import media_origins
from config.storage import s3_storage
from consensus.binary_vote import vote_tasks_create
from review import scan
from review.models import ReviewItem
from tests import factories
from tests.benchmark.conftest import finalize
from tests.conftest import client_for, png_bytes
from tests.s3_fixtures import REGION, new_bucket, s3_client

pytestmark = pytest.mark.django_db


def upload(client, dataset, files: dict[str, bytes]):
    return client.post(
        f"/api/v1/datasets/{dataset.pk}/images/",
        {"files": [io.BytesIO(data) for data in files.values()]},
        format="multipart",
    )


def follow_to_bucket(response, s3_endpoint: str, bucket: str, headers: dict | None = None) -> bytes:
    """A redirect to a presigned URL on the S3 endpoint, fetched as a browser would (no session cookie); the
    bucket's response headers go into `headers` when given."""
    assert response.status_code == 302, response.status_code
    location = response["Location"]
    parts = urlsplit(location)
    assert f"{parts.scheme}://{parts.netloc}" == s3_endpoint and parts.path.startswith(f"/{bucket}/")
    assert "Signature=" in parts.query or "X-Amz-Signature=" in parts.query, "the bucket is private: signed"
    with urllib.request.urlopen(location, timeout=10) as reply:
        if headers is not None:
            headers.update(reply.headers.items())
        return reply.read()


@pytest.fixture
def stored(s3_media, organizer, dataset):
    """Three real images uploaded through the API into the S3 media storage."""
    files = {f"photo-{n}.png": png_bytes(size=(80, 60), seed=n) for n in range(3)}
    response = upload(client_for(organizer), dataset, files)
    assert response.status_code == 201, response.content
    return list(Image.objects.filter(dataset=dataset).order_by("pk"))


def test_uploaded_images_land_in_the_media_bucket(stored, s3_media, s3_endpoint):
    client = s3_client(s3_endpoint)
    for image in stored:
        body = client.get_object(Bucket=s3_media, Key=image.file.name)["Body"].read()
        assert body[:8] == b"\x89PNG\r\n\x1a\n" and len(body) == image.file.size
    listed = client.list_objects_v2(Bucket=s3_media)["Contents"]
    assert sorted(o["Key"] for o in listed) == sorted(i.file.name for i in stored)


def test_the_worker_pages_image_url_gives_the_stored_bytes(stored, s3_media, s3_endpoint, worker, dataset):
    concept = factories.ConceptFactory(name="dog")
    vote_tasks_create(dataset=dataset, concept=concept, images=stored[:1], answers_wanted=1)
    client = client_for(worker)
    body = client.get("/api/v1/tasks/next").json()
    assert body["task"]["image"]["ref"] == image_ref(stored[0].pk)

    fetched = follow_to_bucket(client.get(body["task"]["image"]["url"]), s3_endpoint, s3_media)

    assert (
        fetched == s3_client(s3_endpoint).get_object(Bucket=s3_media, Key=stored[0].file.name)["Body"].read()
    )
    # Pages load images under the CSP: the media origin the settings derive from the endpoint lets it through.
    assert s3_endpoint in media_origins(s3_media, REGION, s3_endpoint)


def test_a_worker_without_a_task_on_the_image_gets_no_bucket_url(stored, worker):
    response = client_for(worker).get(f"/api/v1/task-images/{image_ref(stored[0].pk)}")
    assert response.status_code == 404 and "Location" not in response
    response = client_for(worker).get(f"/api/v1/images/{stored[0].pk}/file")  # workers never load by id
    assert response.status_code == 403 and "Location" not in response


def test_a_review_item_shows_its_image_from_the_bucket(stored, s3_media, s3_endpoint, dataset):
    reviewer = factories.user_with_roles("reviewer", ("reviewers",))
    dog = factories.ConceptFactory(name="dog")
    image = stored[1]
    for x1 in (10, 12):
        Box.objects.create(image=image, concept=dog, x1=x1, y1=10, x2=60, y2=50, state=BoxState.ACCEPTED)
    scan.overlaps_scan(dataset)
    assert ReviewItem.objects.filter(box_a__image=image).exists()
    client = client_for(reviewer)

    item = client.get("/api/v1/review/next").json()

    assert item["image"]["id"] == image.pk
    fetched = follow_to_bucket(client.get(item["image"]["url"]), s3_endpoint, s3_media)
    assert fetched == image.file.open("rb").read()


def test_an_export_is_written_to_the_bucket_and_downloaded_through_its_endpoint(
    stored, s3_media, s3_endpoint, organizer, dataset, django_capture_on_commit_callbacks
):
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    for image in stored:
        Box.objects.create(image=image, concept=dog, x1=5, y1=5, x2=40, y2=30, state=BoxState.ACCEPTED)
    finalize(dataset)
    call_command("make_splits", "--dataset", dataset.name, "--freeze", stdout=io.StringIO())
    client = client_for(organizer)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/v1/datasets/{dataset.pk}/exports/",
            {"format": "coco", "split": "all", "include_images": True},
            format="json",
        )
    assert response.status_code == 201, response.content
    job = client.get(f"/api/v1/exports/{response.json()['id']}/").json()
    assert job["state"] == "done", job

    archive_key = next(
        o["Key"]
        for o in s3_client(s3_endpoint).list_objects_v2(Bucket=s3_media)["Contents"]
        if o["Key"].startswith("exports/")
    )
    download = client.get(f"/api/v1/exports/{job['id']}/file")
    headers: dict = {}
    data = follow_to_bucket(download, s3_endpoint, s3_media, headers)
    assert urlsplit(download["Location"]).path == f"/{s3_media}/{archive_key}"
    # Saved as a file named like the local download, not shown in the browser.
    assert headers["Content-Disposition"] == f'attachment; filename="{archive_key.rsplit("/", 1)[-1]}"'

    archive = zipfile.ZipFile(io.BytesIO(data))
    manifest = json.loads(archive.read("manifest.json"))
    assert sum(manifest["counts"]["images"].values()) == 3
    image_members = [n for n in archive.namelist() if n.startswith("images/")]
    originals = {i.file.open("rb").read() for i in stored}
    assert len(image_members) == 3 and {archive.read(n) for n in image_members} == originals


@pytest.mark.parametrize(
    ("bucket", "region", "endpoint"),
    [
        ("media", None, None),
        ("media", "eu-west-1", None),
        ("media.example.org", None, None),
        ("media.example.org", "eu-west-1", None),
        ("media.example.org", "us-east-1", None),
        ("media", "eu-west-1", "https://minio.example.com:9000"),
    ],
)
def test_the_csp_allows_the_origin_the_storage_signs_image_urls_for(bucket, region, endpoint, monkeypatch):
    """Pages load images under the CSP's img-src: whatever host the storage redirects an image to must be in the
    origins the settings derive from the same bucket, region and endpoint (a dotted bucket name is served
    path-style from the S3 endpoint itself, not from a bucket subdomain)."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "k",
        "AWS_SECRET_ACCESS_KEY": "s",
        "AWS_CONFIG_FILE": os.devnull,
    }.items():
        monkeypatch.setenv(name, value)
    storage = S3Storage(**s3_storage(bucket, region, endpoint)["OPTIONS"])
    signed = urlsplit(storage.url("datasets/1/ab/abc.png"))
    assert f"{signed.scheme}://{signed.netloc}" in media_origins(bucket, region, endpoint)


@pytest.mark.django_db(transaction=True)
def test_the_simulators_transports_follow_an_export_download_to_the_bucket(
    stored, s3_media, organizer, dataset, live_server
):
    """The export endpoint answers 302 to a signed bucket URL; both of the simulator's transports (in-process
    and by URL) follow it without the platform's token and hand back the archive's bytes."""
    from crowd.services import token_for
    from simulator.transport import HttpTransport, InProcessTransport

    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    for image in stored:
        Box.objects.create(image=image, concept=dog, x1=5, y1=5, x2=40, y2=30, state=BoxState.ACCEPTED)
    finalize(dataset)
    token = token_for(organizer)
    in_process = InProcessTransport()
    job = in_process.call(
        "POST",
        f"/api/v1/datasets/{dataset.pk}/exports/",
        token=token,
        json_body={"format": "coco", "split": "all", "include_images": False},
    ).expect(201)
    job = in_process.call("GET", f"/api/v1/exports/{job['id']}/", token=token).expect(200)
    assert job["state"] == "done", job
    path = f"/api/v1/exports/{job['id']}/file"
    assert client_for(organizer).get(path).status_code == 302  # the bucket serves the bytes
    for transport in (in_process, HttpTransport(live_server.url)):
        archive = zipfile.ZipFile(
            io.BytesIO(transport.call("GET", path, token=token, binary=True).expect(200))
        )
        assert json.loads(archive.read("manifest.json"))["format"] == "coco", transport


def test_a_file_over_one_part_goes_up_as_a_multipart_upload_and_comes_back_whole(s3_endpoint):
    """What an export job's archive takes: the storage sends a large file in parts read one at a time
    (config/storage.py), and the object is the file, byte for byte."""
    bucket = new_bucket(s3_endpoint, "multipart")
    storage = S3Storage(**s3_storage(bucket, REGION, s3_endpoint, part_mb=5)["OPTIONS"])
    payload = os.urandom(11 * 2**20 + 123)  # two full 5 MiB parts and a short last one
    with tempfile.TemporaryFile() as spooled:
        spooled.write(payload)
        spooled.seek(0)
        name = storage.save("exports/big.zip", File(spooled, name="big.zip"))
    head = s3_client(s3_endpoint).head_object(Bucket=bucket, Key=name)
    assert head["ETag"].strip('"').endswith("-3"), "a multipart object's ETag counts its parts"
    assert head["ContentLength"] == len(payload)
    with storage.open(name, "rb") as back:
        assert hashlib.sha256(back.read()).digest() == hashlib.sha256(payload).digest()
