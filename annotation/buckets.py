"""Reading images out of an S3 bucket prefix (`s3://bucket/prefix`): list its objects page by page, resumable
after a key, and read one object within a size limit.

By default the endpoint, region and credentials are the media storage's own settings (`AWS_S3_ENDPOINT_URL`,
`AWS_S3_REGION_NAME`, the usual AWS credential variables or the instance role), so an S3-compatible store serves
both; that is for the operator's own commands. A caller acting for a tenant passes the `client` of the bucket the
tenant registered (candidates.sources). Every failure is a `BucketError` whose message names the bucket and what
to do about it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, NoCredentialsError
from django.conf import settings

# S3's own rule for bucket names: 3-63 lowercase letters, digits, dots and hyphens, starting and ending with a
# letter or digit.
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_DENIED = {"AccessDenied", "AllAccessDisabled", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"}
_MISSING = {"NoSuchBucket"}


class BucketError(Exception):
    """The bucket cannot be read as asked; the message says why and names the bucket."""


class BucketObjectTooLarge(BucketError):
    """The object is bigger than the caller accepts; nothing of it was read."""


@dataclass(frozen=True)
class BucketObject:
    key: str
    size: int
    etag: str


@dataclass(frozen=True)
class BucketLocation:
    bucket: str
    prefix: str

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


def bucket_name_valid(name: str) -> bool:
    return bool(_BUCKET_NAME.match(name))


def bucket_url_parse(url: str) -> BucketLocation:
    """`s3://bucket` or `s3://bucket/prefix` (the prefix is taken as written: `photos/` lists one folder,
    `photos` also matches `photos-old/`)."""
    parts = urlsplit(url.strip())
    if parts.scheme != "s3":
        raise BucketError(f"{url!r} is not a bucket URL: write it as s3://bucket/prefix")
    if not _BUCKET_NAME.match(parts.netloc):
        raise BucketError(
            f"{parts.netloc!r} in {url!r} is not a valid bucket name "
            "(3-63 lowercase letters, digits, dots and hyphens)"
        )
    if parts.query or parts.fragment:
        raise BucketError(f"{url!r} has a query or fragment; a bucket URL is s3://bucket/prefix only")
    return BucketLocation(bucket=parts.netloc, prefix=parts.path.lstrip("/"))


def bucket_objects(
    url: str, *, start_after: str | None = None, page_size: int = 1000, client=None
) -> Iterator[BucketObject]:
    """Every object under the URL's prefix in key order (S3 lists keys in UTF-8 byte order), one listing page
    of `page_size` keys (S3's maximum is 1000) at a time. `start_after` resumes after that key. Folder markers
    (keys ending in "/" of size 0) are left out."""
    location = bucket_url_parse(url)
    if not 1 <= page_size <= 1000:
        raise ValueError(f"page_size must be between 1 and 1000, got {page_size}")
    arguments = {"Bucket": location.bucket, "Prefix": location.prefix}
    if start_after:
        arguments["StartAfter"] = start_after
    pages = (
        (client or _client())
        .get_paginator("list_objects_v2")
        .paginate(**arguments, PaginationConfig={"PageSize": page_size})
    )
    with _translated(location.bucket):
        for page in pages:
            for entry in page.get("Contents", ()):
                if entry["Key"].endswith("/") and entry["Size"] == 0:
                    continue
                yield BucketObject(
                    key=entry["Key"], size=entry["Size"], etag=entry.get("ETag", "").strip('"')
                )


def bucket_object_read(url: str, key: str, *, max_bytes: int, client=None) -> bytes:
    """The object's bytes. An object over `max_bytes` is refused from the size in its metadata (a HEAD request),
    before any of it is downloaded; at most `max_bytes` + 1 bytes are ever fetched (it may grow in between)."""
    location = bucket_url_parse(url)
    client = client or _client()
    with _translated(location.bucket, key):
        size = client.head_object(Bucket=location.bucket, Key=key)["ContentLength"]
        if size > max_bytes:
            raise BucketObjectTooLarge(
                f"s3://{location.bucket}/{key} is {size:,} bytes, over the limit of {max_bytes:,}"
            )
        if size == 0:
            return b""
        body = client.get_object(Bucket=location.bucket, Key=key, Range=f"bytes=0-{max_bytes}")["Body"]
        try:
            data = body.read(max_bytes + 1)
        finally:
            body.close()
    if len(data) > max_bytes:
        raise BucketObjectTooLarge(f"s3://{location.bucket}/{key} grew past the limit of {max_bytes:,} bytes")
    return data


def _client():
    """A client on the media storage's endpoint, region and credentials (django-storages' setting names)."""
    return client_for(
        settings.AWS_S3_ENDPOINT_URL,
        settings.AWS_S3_REGION_NAME,
        getattr(settings, "AWS_S3_ACCESS_KEY_ID", None) or getattr(settings, "AWS_ACCESS_KEY_ID", None),
        getattr(settings, "AWS_S3_SECRET_ACCESS_KEY", None)
        or getattr(settings, "AWS_SECRET_ACCESS_KEY", None),
    )


@lru_cache(maxsize=16)
def client_for(endpoint_url: str | None, region: str | None, access_key: str | None, secret_key: str | None):
    # Building a client costs a few hundred milliseconds (it loads the service model), more than reading an
    # image: one per configuration, shared (boto3 clients are thread-safe).
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint_url,
        region_name=region,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        config=Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=10, read_timeout=60),
    )


class _translated:
    """Turns boto's errors into a BucketError naming the bucket (and key) and what went wrong."""

    def __init__(self, bucket: str, key: str | None = None):
        self.bucket = bucket
        self.key = key

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, traceback):
        if exc is None or isinstance(exc, BucketError) or not isinstance(exc, (BotoCoreError, ClientError)):
            return False
        raise self._error(exc) from exc

    def _error(self, exc: Exception) -> BucketError:
        bucket = self.bucket
        if isinstance(exc, NoCredentialsError):
            return BucketError(
                f"no AWS credentials to read bucket {bucket!r}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                "(or give the machine a role)"
            )
        if isinstance(exc, EndpointConnectionError):
            return BucketError(f"cannot reach the S3 endpoint for bucket {bucket!r}: {exc}")
        if isinstance(exc, ClientError):
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in _MISSING:
                return BucketError(f"there is no bucket named {bucket!r} on this S3 endpoint")
            if code in _DENIED:
                return BucketError(
                    f"access to bucket {bucket!r} was denied ({code}): the credentials need s3:ListBucket and "
                    "s3:GetObject on it"
                )
            if code in {"NoSuchKey", "404"} and self.key is not None:
                return BucketError(
                    f"bucket {bucket!r} has no object {self.key!r} (or there is no such bucket)"
                )
            return BucketError(f"bucket {bucket!r}: {code or 'error'}: {exc}")
        return BucketError(f"bucket {bucket!r}: {exc}")
