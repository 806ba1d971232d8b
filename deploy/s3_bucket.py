"""The compose file's one-shot s3-bucket service: creates the media bucket (AWS_STORAGE_BUCKET_NAME) on the S3
endpoint the settings use (AWS_S3_ENDPOINT_URL, AWS_S3_REGION_NAME; credentials from the usual AWS variables)
when it is missing. A bucket that exists is left alone, so running it again, or against S3 with a bucket made
by its owner, changes nothing."""

from __future__ import annotations

import os
import sys

import boto3
from botocore.exceptions import ClientError


def bucket_ensure(client, bucket: str, region: str | None) -> bool:
    """Create `bucket` unless it exists; True when it was created."""
    try:
        client.head_bucket(Bucket=bucket)
        return False
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in {"404", "NoSuchBucket", "NotFound"}:
            raise
    options = {}
    if region and region != "us-east-1":  # us-east-1 is S3's default and refuses to be named as a constraint
        options["CreateBucketConfiguration"] = {"LocationConstraint": region}
    client.create_bucket(Bucket=bucket, **options)
    return True


def main() -> int:
    bucket = os.environ.get("AWS_STORAGE_BUCKET_NAME", "")
    if not bucket:
        print(
            "AWS_STORAGE_BUCKET_NAME is not set: media stays on local files, no bucket to create",
            file=sys.stderr,
        )
        return 1
    region = os.environ.get("AWS_S3_REGION_NAME") or None
    client = boto3.client(
        "s3", endpoint_url=os.environ.get("AWS_S3_ENDPOINT_URL") or None, region_name=region
    )
    created = bucket_ensure(client, bucket, region)
    print(f"bucket {bucket} {'created' if created else 'exists'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
