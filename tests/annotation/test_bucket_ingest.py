"""`manage.py bucket_ingest s3://bucket/prefix`: a bucket prefix stored through the ingestion checks into the S3
media storage, bad objects reported by reason, a re-run that downloads nothing already stored, and --resume
after the last key done (the previous run interrupted or finished)."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from annotation import buckets
from annotation.models import BucketCursor, Image
from tests.annotation import imagefiles
from tests.s3_fixtures import s3_client

pytestmark = pytest.mark.django_db


def run(url: str, dataset, **options) -> str:
    out = io.StringIO()
    call_command(
        "bucket_ingest",
        url,
        dataset=dataset.name,
        stdout=out,
        stderr=io.StringIO(),
        no_progress=True,
        **options,
    )
    return out.getvalue()


def put(source, objects: dict[str, bytes]) -> None:
    client, bucket = source
    for key, data in objects.items():
        client.put_object(Bucket=bucket, Key=key, Body=data)


def test_a_prefix_is_stored_in_the_media_bucket_and_bad_objects_are_reported_by_reason(
    s3_media, s3_source, s3_endpoint, dataset, settings
):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "MAX_IMAGE_BYTES": 60_000}
    put(
        s3_source,
        {
            "photos/a.jpg": imagefiles.jpeg(1),
            "photos/b.png": imagefiles.encode(imagefiles.picture(2), "PNG"),
            "photos/nested/c.jpg": imagefiles.jpeg(3),
            "photos/README.txt": imagefiles.TEXT,
            "photos/half.jpg": imagefiles.truncated_jpeg(),
            "photos/huge.bmp": b"BM" + bytes(70_000),
            "elsewhere/d.jpg": imagefiles.jpeg(4),
        },
    )
    _, bucket = s3_source

    output = run(f"s3://{bucket}/photos/", dataset)

    assert "7 objects listed" not in output and "6 objects listed, stored 3, 0 already stored" in output
    assert "photos/README.txt: not an image" in output
    assert "photos/half.jpg: the image data is truncated" in output
    assert (
        f"photos/huge.bmp: s3://{bucket}/photos/huge.bmp is 70,002 bytes, over the limit of 60,000" in output
    )
    images = Image.objects.filter(dataset=dataset)
    assert sorted(images.values_list("source", flat=True)) == [
        f"s3://{bucket}/photos/{name}" for name in ("a.jpg", "b.png", "nested/c.jpg")
    ]
    media = {o["Key"] for o in s3_client(s3_endpoint).list_objects_v2(Bucket=s3_media)["Contents"]}
    assert media == {image.file.name for image in images}, "the bytes are in the media bucket"
    assert BucketCursor.objects.get(dataset=dataset).last_key == "photos/nested/c.jpg"


def test_a_rerun_downloads_nothing_already_stored_and_adds_nothing(
    s3_media, s3_source, dataset, bucket_downloads
):
    put(s3_source, {f"set/{n}.jpg": imagefiles.jpeg(10 + n) for n in range(3)})
    url = f"s3://{s3_source[1]}/set"
    run(url, dataset)
    assert len(bucket_downloads) == 3
    bucket_downloads.clear()

    output = run(url, dataset)

    assert "3 objects listed, stored 0, 3 already stored (skipped)" in output
    assert bucket_downloads == [] and Image.objects.filter(dataset=dataset).count() == 3


def test_resume_lists_only_the_keys_after_the_last_one_done(s3_media, s3_source, dataset, bucket_downloads):
    put(s3_source, {"p/1.jpg": imagefiles.jpeg(21), "p/2.jpg": imagefiles.jpeg(22)})
    url = f"s3://{s3_source[1]}/p/"
    run(url, dataset)
    put(s3_source, {"p/0.jpg": imagefiles.jpeg(20), "p/3.jpg": imagefiles.jpeg(23)})
    bucket_downloads.clear()

    output = run(url, dataset, resume=True)

    assert "Resuming after 'p/2.jpg'" in output and "1 objects listed, stored 1" in output
    assert bucket_downloads == ["p/3.jpg"]
    # Without --resume the whole prefix is listed again: the new key before the cursor is found, the rest skipped.
    output = run(url, dataset)
    assert "4 objects listed, stored 1, 3 already stored (skipped)" in output
    assert Image.objects.filter(dataset=dataset, source__endswith="/p/0.jpg").exists()


def test_an_interrupted_run_resumes_after_the_last_key_it_dealt_with(
    s3_media, s3_source, dataset, monkeypatch
):
    put(s3_source, {f"big/{n:02d}.jpg": imagefiles.jpeg(30 + n) for n in range(5)})
    url = f"s3://{s3_source[1]}/big/"
    read = buckets.bucket_object_read
    calls = []

    def interrupted_on_the_fourth(url, key, *, max_bytes):
        calls.append(key)
        if len(calls) == 4:
            raise KeyboardInterrupt  # the operator's Ctrl-C, or a killed process
        return read(url, key, max_bytes=max_bytes)

    monkeypatch.setattr(
        "annotation.management.commands.bucket_ingest.bucket_object_read", interrupted_on_the_fourth
    )
    with pytest.raises(KeyboardInterrupt):
        run(url, dataset)
    assert BucketCursor.objects.get(dataset=dataset).last_key == "big/02.jpg"
    assert Image.objects.filter(dataset=dataset).count() == 3
    monkeypatch.setattr("annotation.management.commands.bucket_ingest.bucket_object_read", read)

    output = run(url, dataset, resume=True)

    assert "2 objects listed, stored 2" in output
    assert Image.objects.filter(dataset=dataset).count() == 5


def test_a_cursor_behind_the_last_key_stored_costs_no_download(
    s3_media, s3_source, dataset, bucket_downloads
):
    """A killed run may not have written its cursor for its last second: resuming from the older key skips the
    keys it stored meanwhile without fetching them."""
    put(s3_source, {f"k/{n}.jpg": imagefiles.jpeg(40 + n) for n in range(4)})
    url = f"s3://{s3_source[1]}/k/"
    run(url, dataset)
    BucketCursor.objects.filter(dataset=dataset).update(last_key="k/0.jpg")
    bucket_downloads.clear()

    output = run(url, dataset, resume=True)

    assert "3 objects listed, stored 0, 3 already stored (skipped)" in output and bucket_downloads == []
    assert BucketCursor.objects.get(dataset=dataset).last_key == "k/3.jpg"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("photos/", "is not a bucket URL: write it as s3://bucket/prefix"),
        ("s3://UPPER/x", "not a valid bucket name"),
        ("s3://nobody-made-this-bucket/x", "there is no bucket named 'nobody-made-this-bucket'"),
    ],
)
def test_bad_urls_and_missing_buckets_fail_with_the_problem_named(url, message, s3_source, dataset):
    with pytest.raises(CommandError, match=message):
        run(url, dataset)


def test_an_empty_prefix_and_an_unknown_dataset_fail_clearly(s3_source, dataset):
    url = f"s3://{s3_source[1]}/nothing-here/"
    with pytest.raises(CommandError, match=f"no objects under {url}"):
        run(url, dataset)
    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        call_command("bucket_ingest", url, dataset="nope", stdout=io.StringIO())


def test_a_prefix_of_nothing_but_bad_objects_fails_after_the_summary(s3_media, s3_source, dataset):
    put(s3_source, {"junk/notes.txt": imagefiles.TEXT})
    with pytest.raises(CommandError, match="none of the 1 new objects was stored"):
        run(f"s3://{s3_source[1]}/junk/", dataset)
