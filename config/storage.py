"""The media storage's S3 configuration, built in one place: the settings use it when a bucket is named, and the
S3 tests build the very same storage against their own endpoint."""

from __future__ import annotations

# Files over one part go up as multipart uploads, read a part at a time from the open file: an export archive of
# any size costs a handful of parts in memory (s3transfer reads each part of a file object into memory before
# sending it, and doubles the part size past S3's 10,000 parts: 8 MiB parts reach 80 GB before growing).
PART_MB = 8
MAX_CONCURRENCY = 4


def s3_storage(bucket: str, region: str | None, endpoint_url: str | None, part_mb: int = PART_MB) -> dict:
    from boto3.s3.transfer import TransferConfig

    part = part_mb * 2**20
    transfer = TransferConfig(
        multipart_threshold=part, multipart_chunksize=part, max_concurrency=MAX_CONCURRENCY
    )
    # Parts read and waiting for a sending thread (s3transfer's default is 10): with as many as threads, one
    # upload holds about MAX_CONCURRENCY + 1 parts (s3transfer.manager.TransferConfig's bound), 40 MiB.
    transfer.max_in_memory_upload_chunks = MAX_CONCURRENCY
    return {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": bucket,
            "region_name": region,
            "endpoint_url": endpoint_url,
            "default_acl": None,
            # Private bucket: image and export URLs are presigned and expire after an hour (django-storages' default).
            "querystring_auth": True,
            "file_overwrite": False,
            "transfer_config": transfer,
        },
    }
