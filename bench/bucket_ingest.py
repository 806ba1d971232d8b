"""Images/s of `bucket_ingest` from an S3 endpoint (moto's server on loopback), and of its re-run (listing only,
every key skipped), against `ingest_images` of the same images from a local folder in the same run.

Usage: python bench/bucket_ingest.py [--images 400] [--quick]

Uses a temporary SQLite database and media folder (removed afterwards); both runs store into the same local media
storage, so the difference is reading from the bucket (a HEAD and a ranged GET per object, pages of 1000 keys).
"""

from __future__ import annotations

import argparse
import io
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pictures(n: int) -> list[bytes]:
    """Distinct 320x240 JPEGs (random noise, so no two are near-duplicates)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (240, 320, 3), dtype=np.uint8)).save(buffer, "JPEG", quality=85)
        out.append(buffer.getvalue())
    return out


def timed(*args, **options) -> float:
    from django.core.management import call_command

    t0 = time.perf_counter()
    call_command(*args, stdout=io.StringIO(), stderr=io.StringIO(), no_progress=True, **options)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=400)
    parser.add_argument("--quick", action="store_true", help="100 images")
    args = parser.parse_args()
    n = 100 if args.quick else args.images

    scratch = Path(tempfile.mkdtemp(prefix="bench-bucket-"))
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    os.environ.update(
        DATABASE_URL=f"sqlite:///{scratch / 'db.sqlite3'}",
        CROWDLABEL_MEDIA_ROOT=str(scratch / "media"),
        AWS_S3_ENDPOINT_URL=endpoint,
        AWS_S3_REGION_NAME="us-east-1",
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_CONFIG_FILE=os.devnull,
    )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import boto3
    import django

    django.setup()
    from django.core.management import call_command

    from annotation.models import Dataset, Image

    try:
        call_command("migrate", verbosity=0)
        images = pictures(n)
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        client.create_bucket(Bucket="bench-source")
        folder = scratch / "folder"
        folder.mkdir()
        for k, data in enumerate(images):
            client.put_object(Bucket="bench-source", Key=f"photos/{k:05d}.jpg", Body=data)
            (folder / f"{k:05d}.jpg").write_bytes(data)
        Dataset.objects.create(name="from-bucket")
        Dataset.objects.create(name="from-folder")

        local = timed("ingest_images", str(folder), dataset="from-folder")
        bucket = timed("bucket_ingest", "s3://bench-source/photos/", dataset="from-bucket")
        rerun = timed("bucket_ingest", "s3://bench-source/photos/", dataset="from-bucket")
        stored = Image.objects.filter(dataset__name="from-bucket").count()
        assert stored == n == Image.objects.filter(dataset__name="from-folder").count(), (
            "not every image stored"
        )

        print(f"{n} JPEGs of 320x240 ({sum(map(len, images)) / n / 1024:.1f} KiB each), SQLite, local media")
        print(f"ingest_images from a local folder (reference): {n / local:8.1f} images/s  ({local:.2f} s)")
        print(f"bucket_ingest from moto on loopback:           {n / bucket:8.1f} images/s  ({bucket:.2f} s)")
        print(f"bucket_ingest re-run (all {n} keys skipped):   {n / rerun:8.1f} keys/s    ({rerun:.2f} s)")
        print(
            f"throughput bucket / folder: {local / bucket:.2f}; re-run time / first run time: {rerun / bucket:.3f}"
        )
    finally:
        server.stop()
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
