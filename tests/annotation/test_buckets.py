"""Listing and reading a bucket prefix (annotation/buckets.py) against a real S3 endpoint on loopback: pages past
S3's 1000 keys, resuming after a key, the size limit checked before any download, and errors naming the bucket."""

from __future__ import annotations

import socket

import boto3
import pytest
from moto.core.authorization import enable_iam_authentication

from annotation import buckets
from annotation.buckets import (
    BucketError,
    BucketObject,
    BucketObjectTooLarge,
    bucket_object_read,
    bucket_objects,
    bucket_url_parse,
)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://bucket/prefix", "not a bucket URL"),
        ("bucket/prefix", "not a bucket URL"),
        ("s3://", "not a valid bucket name"),
        ("s3://Has_Capitals/x", "not a valid bucket name"),
        ("s3://ab/x", "not a valid bucket name"),
        ("s3://photos/x?versionId=3", "query or fragment"),
    ],
)
def test_a_bad_bucket_url_is_refused_with_the_problem_named(url, problem):
    with pytest.raises(BucketError, match=problem):
        list(bucket_objects(url))


def test_a_bucket_url_splits_into_bucket_and_prefix_as_written():
    assert bucket_url_parse("s3://photos.example/dogs/2024/") == buckets.BucketLocation(
        "photos.example", "dogs/2024/"
    )
    assert str(bucket_url_parse("s3://photos")) == "s3://photos/"


def test_listing_passes_s3s_1000_key_page_and_keeps_key_order(s3_source):
    client, bucket = s3_source
    keys = [f"many/{n:05d}.jpg" for n in range(1050)]
    for key in keys:
        client.put_object(Bucket=bucket, Key=key, Body=b"x")
    client.put_object(Bucket=bucket, Key="other/outside.jpg", Body=b"x")

    listed = list(bucket_objects(f"s3://{bucket}/many/"))

    assert [o.key for o in listed] == keys, "a listing that stopped at the first page would hold 1000 keys"
    assert all(o.size == 1 and len(o.etag) == 32 for o in listed)


def test_small_pages_list_the_same_objects_and_resume_after_a_key(s3_source):
    client, bucket = s3_source
    for n in range(25):
        client.put_object(Bucket=bucket, Key=f"p/{n:02d}.png", Body=bytes(n + 1))
    url = f"s3://{bucket}/p/"

    assert [o.key for o in bucket_objects(url, page_size=4)] == [f"p/{n:02d}.png" for n in range(25)]
    resumed = list(bucket_objects(url, start_after="p/17.png", page_size=4))
    assert resumed == [BucketObject(f"p/{n:02d}.png", n + 1, resumed[n - 18].etag) for n in range(18, 25)]
    with pytest.raises(ValueError, match="page_size"):
        list(bucket_objects(url, page_size=1001))


def test_folder_markers_are_not_listed_as_objects(s3_source):
    client, bucket = s3_source
    client.put_object(Bucket=bucket, Key="dogs/", Body=b"")
    client.put_object(Bucket=bucket, Key="dogs/a.png", Body=b"abc")
    assert [o.key for o in bucket_objects(f"s3://{bucket}/dogs")] == ["dogs/a.png"]


def test_keys_with_spaces_plus_signs_and_accents_list_and_read_as_written(s3_source):
    client, bucket = s3_source
    key = "photos/chien de garde+été.jpg"
    client.put_object(Bucket=bucket, Key=key, Body=b"woof")
    assert [o.key for o in bucket_objects(f"s3://{bucket}/photos/")] == [key]
    assert bucket_object_read(f"s3://{bucket}/photos/", key, max_bytes=10) == b"woof"


def test_a_missing_bucket_is_named_in_the_error(s3_source):
    with pytest.raises(BucketError, match="no bucket named 'nobody-made-this-bucket'"):
        list(bucket_objects("s3://nobody-made-this-bucket/x"))
    with pytest.raises(BucketError, match="'nobody-made-this-bucket'"):
        bucket_object_read("s3://nobody-made-this-bucket/", "x", max_bytes=10)


def test_denied_access_names_the_bucket_and_the_permissions_needed(s3_source, s3_endpoint, settings):
    client, bucket = s3_source
    client.put_object(Bucket=bucket, Key="a.png", Body=b"abc")
    iam = boto3.client("iam", endpoint_url=s3_endpoint, region_name="us-east-1")
    iam.create_user(UserName="no-rights")
    key = iam.create_access_key(UserName="no-rights")["AccessKey"]
    settings.AWS_ACCESS_KEY_ID = key["AccessKeyId"]
    settings.AWS_SECRET_ACCESS_KEY = key["SecretAccessKey"]

    with enable_iam_authentication():
        with pytest.raises(BucketError, match=f"access to bucket '{bucket}' was denied .*s3:ListBucket"):
            list(bucket_objects(f"s3://{bucket}/"))
        with pytest.raises(BucketError, match=f"'{bucket}'"):
            bucket_object_read(f"s3://{bucket}/", "a.png", max_bytes=10)


def test_reading_an_object_returns_its_bytes_and_a_missing_key_is_named(s3_source):
    client, bucket = s3_source
    client.put_object(Bucket=bucket, Key="img/a.png", Body=b"exactly ten")
    assert bucket_object_read(f"s3://{bucket}/img/", "img/a.png", max_bytes=11) == b"exactly ten"
    with pytest.raises(BucketError, match="no object 'img/missing.png'"):
        bucket_object_read(f"s3://{bucket}/img/", "img/missing.png", max_bytes=11)


def test_an_object_over_the_limit_is_refused_without_being_downloaded(s3_source, bucket_downloads):
    client, bucket = s3_source
    client.put_object(Bucket=bucket, Key="big.tif", Body=b"\0" * 2_000_000)
    with pytest.raises(BucketObjectTooLarge, match="2,000,000 bytes, over the limit of 1,000"):
        bucket_object_read(f"s3://{bucket}/", "big.tif", max_bytes=1000)
    assert bucket_downloads == [], "the size comes from the object's metadata, not from fetching it"
    assert bucket_object_read(f"s3://{bucket}/", "big.tif", max_bytes=2_000_000)[:4] == b"\0\0\0\0"
    assert bucket_downloads == ["big.tif"]


def test_missing_credentials_and_an_unreachable_endpoint_are_named(s3_source, settings, monkeypatch):
    _, bucket = s3_source
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role to ask on a test machine
    buckets.client_for.cache_clear()  # a client keeps the credentials it found first
    try:
        with pytest.raises(BucketError, match=f"no AWS credentials to read bucket '{bucket}'"):
            list(bucket_objects(f"s3://{bucket}/"))
    finally:
        buckets.client_for.cache_clear()
        monkeypatch.undo()

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]  # nothing listens once the socket is closed
    settings.AWS_S3_ENDPOINT_URL = f"http://127.0.0.1:{closed_port}"
    with pytest.raises(BucketError, match=f"cannot reach the S3 endpoint for bucket '{bucket}'"):
        list(bucket_objects(f"s3://{bucket}/"))
