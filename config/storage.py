"""The media storage's S3 configuration, built in one place: the settings use it when a bucket is named, and the
S3 tests build the very same storage against their own endpoint."""

from __future__ import annotations


def s3_storage(bucket: str, region: str | None, endpoint_url: str | None) -> dict:
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
        },
    }
