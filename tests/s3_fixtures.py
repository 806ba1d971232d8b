"""S3 for real in tests: moto's server mode on a loopback port is the S3 endpoint, and the media storage is the
project's own S3 storage (config/storage.py) on a fresh bucket per test."""

from __future__ import annotations

import logging
import os
import socket
import uuid

import boto3
import pytest

from config.storage import s3_storage

REGION = "us-east-1"
# The endpoint accepts any key; these keep a developer's own AWS credentials and profile out of the tests.
_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_SESSION_TOKEN": None,
    "AWS_PROFILE": None,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def s3_endpoint():
    """The endpoint URL of an S3 server on loopback, for the whole session."""
    from moto.server import ThreadedMotoServer  # here: only the S3 tests pay for importing the server

    saved = {name: os.environ.get(name) for name in _ENVIRONMENT}
    for name, value in _ENVIRONMENT.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one log line per request otherwise
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def s3_client(endpoint: str):
    return boto3.client("s3", endpoint_url=endpoint, region_name=REGION)


def new_bucket(endpoint: str, stem: str) -> str:
    name = f"{stem}-{uuid.uuid4().hex[:12]}"
    s3_client(endpoint).create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3_media(s3_endpoint, settings):
    """The media storage is S3 on a new bucket (its name is returned); buckets.py uses the same endpoint."""
    bucket = new_bucket(s3_endpoint, "media")
    settings.AWS_S3_ENDPOINT_URL = s3_endpoint
    settings.AWS_S3_REGION_NAME = REGION
    settings.STORAGES = {**settings.STORAGES, "default": s3_storage(bucket, REGION, s3_endpoint)}
    return bucket


@pytest.fixture
def s3_source(s3_endpoint, settings):
    """A bucket to ingest from, apart from the media bucket; returns (client, bucket name)."""
    settings.AWS_S3_ENDPOINT_URL = s3_endpoint
    settings.AWS_S3_REGION_NAME = REGION
    return s3_client(s3_endpoint), new_bucket(s3_endpoint, "source")


@pytest.fixture
def bucket_downloads(s3_source):
    """The keys annotation.buckets fetches (GetObject calls its client sends to the endpoint), in order."""
    from annotation import buckets

    keys: list[str] = []

    def record(params, **kwargs):
        keys.append(params["Key"])

    events = buckets._client().meta.events
    events.register("provide-client-params.s3.GetObject", record)
    yield keys
    events.unregister("provide-client-params.s3.GetObject", record)
