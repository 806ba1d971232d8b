"""Which buckets a dataset's candidate imports may read, and how: the buckets its organizers registered
(`SourceBucket`), never the media bucket, each read with its own credentials or with the platform's when the
operator granted that bucket to that dataset. A row naming any other bucket fails exactly like a missing key, so
an import cannot tell which keys exist where it has no access (issue 35, item 2).

Settings (read when used): `CROWDLABEL_SOURCE_BUCKET_ENDPOINTS`, the S3 endpoints besides the platform's own an
organizer may name (no other address is ever contacted: an endpoint is not a way around the SSRF rules), and
`CROWDLABEL_SOURCE_BUCKET_GRANTS`, `dataset:bucket` entries whose reads use the platform's credentials.
"""

from __future__ import annotations

import base64
import hashlib
import logging

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

from annotation import buckets

from .models import SourceBucket

log = logging.getLogger(__name__)

# The one text for every s3 row that could not be read: no such bucket or key, a bucket not registered for the
# dataset, the media bucket, denied access, an unreachable endpoint. The operator's log has the real cause.
UNREADABLE = (
    "cannot be read: no such object in a bucket registered for this dataset, or no access to it with the "
    "bucket's credentials"
)


class SourceRefused(ValueError):
    """A registration (or a read) the rules above do not allow; the message says which rule."""


def _fernet() -> Fernet:
    digest = hashlib.sha256(b"crowdlabel.source-bucket-secret:" + settings.SECRET_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def secret_seal(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode() if secret else ""


def secret_open(sealed: str) -> str:
    """The stored secret; empty when there is none or it was sealed under another SECRET_KEY (re-register)."""
    if not sealed:
        return ""
    try:
        return _fernet().decrypt(sealed.encode()).decode()
    except InvalidToken:
        return ""


def media_buckets() -> set[str]:
    """The platform's own buckets: the media storage's (whatever storage names one)."""
    names = {settings.AWS_STORAGE_BUCKET_NAME} if settings.AWS_STORAGE_BUCKET_NAME else set()
    for storage in settings.STORAGES.values():
        name = (storage.get("OPTIONS") or {}).get("bucket_name")
        if name:
            names.add(name)
    return names


def approved_endpoints() -> set[str]:
    return {e.rstrip("/") for e in settings.CROWDLABEL["SOURCE_BUCKET_ENDPOINTS"]}


def granted(dataset, bucket: str) -> bool:
    """Whether the operator lets this dataset read the bucket with the platform's credentials."""
    return f"{dataset.name}:{bucket}" in set(settings.CROWDLABEL["SOURCE_BUCKET_GRANTS"])


def source_problem(dataset, *, bucket: str, endpoint_url: str, access_key_id: str, secret: bool) -> str:
    """Why this registration is not allowed ("" when it is)."""
    if not buckets.bucket_name_valid(bucket):
        return f"{bucket!r} is not a valid bucket name (3-63 lowercase letters, digits, dots and hyphens)"
    if bucket in media_buckets():
        return f"bucket {bucket!r} is the platform's media bucket; it cannot be a source"
    if endpoint_url and endpoint_url.rstrip("/") not in approved_endpoints():
        allowed = ", ".join(sorted(approved_endpoints())) or "none"
        return (
            f"endpoint {endpoint_url!r} is not one the operator approved (CROWDLABEL_SOURCE_BUCKET_ENDPOINTS: "
            f"{allowed}); leave it empty for the platform's S3 endpoint"
        )
    if bool(access_key_id) != secret:
        return "give both access_key_id and secret_access_key, or neither (the platform's credentials)"
    if not access_key_id:
        if endpoint_url:
            return (
                "the platform's credentials are only used on the platform's own endpoint: give an access key"
            )
        if not granted(dataset, bucket):
            return (
                f"bucket {bucket!r} is not granted to dataset {dataset.name!r} by the operator "
                "(CROWDLABEL_SOURCE_BUCKET_GRANTS): give an access key that can read it"
            )
    return ""


def source_client(source: SourceBucket):
    """A client for reading this registered bucket, checked against today's rules (a grant withdrawn, an
    endpoint no longer approved or a bucket that became the media bucket refuse it). SourceRefused otherwise."""
    secret = secret_open(source.secret_sealed)
    problem = source_problem(
        source.dataset,
        bucket=source.bucket,
        endpoint_url=source.endpoint_url,
        access_key_id=source.access_key_id,
        secret=bool(secret),
    )
    if problem:
        raise SourceRefused(problem)
    if source.access_key_id:
        return buckets.client_for(
            source.endpoint_url or settings.AWS_S3_ENDPOINT_URL,
            source.region or settings.AWS_S3_REGION_NAME,
            source.access_key_id,
            secret,
        )
    return buckets._client()


def registered(dataset, bucket: str) -> SourceBucket | None:
    return SourceBucket.objects.select_related("dataset").filter(dataset=dataset, bucket=bucket).first()


def object_read(dataset, bucket: str, key: str, *, max_bytes: int, sources: dict) -> bytes:
    """The object's bytes for a candidate row of `dataset`; BucketError with the one UNREADABLE text for any
    failure but a too large object. `sources` caches (bucket -> client or None) over one batch."""
    url = f"s3://{bucket}/{key}"
    if bucket not in sources:
        source = registered(dataset, bucket)
        try:
            sources[bucket] = source_client(source) if source is not None else None
        except SourceRefused as exc:
            log.warning("candidate source bucket %s of dataset %s refused: %s", bucket, dataset.pk, exc)
            sources[bucket] = None
    client = sources[bucket]
    if client is None:
        raise buckets.BucketError(f"{url} {UNREADABLE}")
    try:
        return buckets.bucket_object_read(f"s3://{bucket}", key, max_bytes=max_bytes, client=client)
    except buckets.BucketObjectTooLarge:
        raise
    except buckets.BucketError as exc:
        log.warning("candidate source %s of dataset %s: %s", url, dataset.pk, exc)
        raise buckets.BucketError(f"{url} {UNREADABLE}") from None


def source_register(
    *,
    dataset,
    bucket: str,
    endpoint_url: str = "",
    region: str = "",
    access_key_id: str = "",
    secret_access_key: str = "",
    actor=None,
) -> SourceBucket:
    """Register (or re-register, replacing its settings) a source bucket of the dataset. SourceRefused when the
    rules above do not allow it."""
    problem = source_problem(
        dataset,
        bucket=bucket,
        endpoint_url=endpoint_url,
        access_key_id=access_key_id,
        secret=bool(secret_access_key),
    )
    if problem:
        raise SourceRefused(problem)
    source, _ = SourceBucket.objects.update_or_create(
        dataset=dataset,
        bucket=bucket,
        defaults={
            "endpoint_url": endpoint_url.rstrip("/"),
            "region": region,
            "access_key_id": access_key_id,
            "secret_sealed": secret_seal(secret_access_key),
            "created_by": actor,
        },
    )
    return source
