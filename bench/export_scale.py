"""Exports and statistics at a million images: time and peak RSS of the COCO, VOC, YOLO and ILSVRC exports of
PostgreSQL datasets of growing size (N images, 3 final boxes each, split 80/10/10, test withheld), beside a bare
json.dump of the same COCO content held in memory, in the same run; with ``--s3`` the export archive's upload
to an S3 endpoint (moto's server on loopback) as a multipart upload; with ``--parallel`` whether two export
processes at once finish sooner than one after the other on this machine; with ``--stats`` p50/p99 of the
statistics and class-statistics endpoints answered from kept reports, and the time to compute each report.

Usage: python bench/export_scale.py [--sizes 10000,100000,1000000] [--formats coco,voc,yolo,ilsvrc]
       [--to dir|zip|both] [--s3] [--parallel] [--stats] [--quick]

Uses its own PostgreSQL database (crowdlabel_bench_export_hx, or --db-name; created and migrated on first
use, datasets kept for the next run). Every measurement runs in a fresh subprocess so its peak RSS (VmHWM) is its own.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from pg_seed import ensure_database, peak_rss_mb, setup_django  # noqa: E402

ORGANIZER = "bench-organizer"


def maxrss_mb() -> float:
    return peak_rss_mb()


def _source(name: str):
    from annotation.models import Dataset
    from benchmark.selectors import DatasetSource, split_version_latest

    dataset = Dataset.objects.get(name=name)
    return DatasetSource(dataset, split_version_latest(dataset))


def _tree_size(root: Path) -> tuple[int, int]:
    files = size = 0
    for dirpath, _, names in os.walk(root):
        for n in names:
            files += 1
            size += os.stat(os.path.join(dirpath, n)).st_size
    return files, size


def child_export(name: str, fmt: str, archive: bool) -> dict:
    from benchmark.exporters import ExportOptions, export
    from benchmark.selectors import snapshot

    source = _source(name)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
        out = Path(scratch) / ("out.zip" if archive else "out")
        t0 = time.perf_counter()
        with snapshot():  # as `services.export_run` reads: one read-only transaction
            manifest = export(source, fmt, out, ExportOptions(split="all", include_images=False))
        seconds = time.perf_counter() - t0
        files, size = _tree_size(Path(scratch))
    return {
        "seconds": seconds,
        "maxrss_mb": maxrss_mb(),
        "files": files,
        "bytes": size,
        "images": sum(manifest["counts"]["images"].values()),
        "boxes": sum(manifest["counts"]["boxes"].values()),
    }


def child_json(name: str) -> dict:
    """The reference: the same COCO content built in memory first (untimed), then one json.dump (timed)."""
    source = _source(name)
    content: dict = {"info": {}, "licenses": [], "categories": [], "images": [], "annotations": []}
    content["categories"] = [{"id": c.id, "name": c.name, "wnid": c.wnid} for c in source.categories()]
    for split in source.splits():
        content["images"] += [
            {"id": i.id, "file_name": i.file_name, "width": i.width, "height": i.height}
            for i in source.images(split)
        ]
        if split == "test":
            continue
        content["annotations"] += [
            {
                "id": b.id,
                "image_id": b.image_id,
                "category_id": b.category_id,
                "bbox": [b.x1, b.y1, b.x2 - b.x1, b.y2 - b.y1],
                "area": (b.x2 - b.x1) * (b.y2 - b.y1),
                "iscrowd": 0,
            }
            for b in source.boxes(split)
        ]
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
        t0 = time.perf_counter()
        with open(Path(scratch) / "dump.json", "w") as f:
            json.dump(content, f)
        seconds = time.perf_counter() - t0
        size = (Path(scratch) / "dump.json").stat().st_size
    return {"seconds": seconds, "maxrss_mb": maxrss_mb(), "files": 1, "bytes": size}


def child_s3(name: str, fmt: str, endpoint: str, bucket: str) -> dict:
    """Export to a zip, then upload it through the configured S3 storage (as an export job does)."""
    from django.conf import settings
    from django.core.files import File
    from django.core.files.storage import storages

    from config.storage import s3_storage

    settings.STORAGES = {**settings.STORAGES, "default": s3_storage(bucket, "us-east-1", endpoint)}
    storages._storages.pop("default", None)  # rebuilt from the new settings
    from benchmark.exporters import ExportOptions, export
    from benchmark.selectors import snapshot

    source = _source(name)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
        out = Path(scratch) / "out.zip"
        t0 = time.perf_counter()
        with snapshot():
            export(source, fmt, out, ExportOptions(split="all", include_images=False))
        export_seconds = time.perf_counter() - t0
        rss_after_export = maxrss_mb()
        size = out.stat().st_size
        t0 = time.perf_counter()
        with out.open("rb") as data:
            key = storages["default"].save(f"exports/{name}-{fmt}.zip", File(data))
        upload_seconds = time.perf_counter() - t0
    import boto3

    head = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").head_object(
        Bucket=bucket, Key=key
    )
    etag = head["ETag"].strip('"')
    return {
        "seconds": export_seconds + upload_seconds,
        "export_seconds": export_seconds,
        "upload_seconds": upload_seconds,
        "maxrss_mb": maxrss_mb(),
        "maxrss_export_mb": rss_after_export,
        "bytes": size,
        "files": 1,
        "parts": int(etag.split("-")[1]) if "-" in etag else 1,
        "stored_bytes": head["ContentLength"],
    }


def run_child(args: list[str]) -> dict:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"child {args} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def start_child(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True)


def row(label: str, r: dict, base: float | None) -> str:
    ratio = f"{r['seconds'] / base:.2f}" if base else "-"
    return (
        f"{label:<34}{r['seconds']:>9.1f}{ratio:>10}{r['maxrss_mb']:>11.0f}{r.get('files', 0):>10,}"
        f"{r['bytes'] / 2**20:>12.1f}"
    )


def bench_exports(db: str, name: str, formats: list[str], with_json: bool, targets: list[str]) -> None:
    print(
        f"{'run':<34}{'seconds':>9}{'x json':>10}{'maxrss MB':>11}{'files':>10}{'written MB':>12}", flush=True
    )
    base = None
    if with_json:
        r = run_child(["--db-name", db, "--child", "json", "--dataset", name])
        base = r["seconds"]
        print(row("bare json.dump (in memory)", r, None), flush=True)
    for fmt in formats:
        for target in targets:
            r = run_child(["--db-name", db, "--child", f"{target}:{fmt}", "--dataset", name])
            print(
                row(f"{fmt} export, {'to a directory' if target == 'export' else 'to a zip'}", r, base),
                f" ({r['images']:,} images, {r['boxes']:,} boxes)",
                flush=True,
            )


def bench_s3(db: str, name: str, formats: list[str]) -> None:
    import boto3
    from moto.server import ThreadedMotoServer

    for var, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        os.environ[var] = value
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        bucket = "bench-exports"
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
        print(
            f"{'zip to S3':<14}{'export s':>9}{'upload s':>10}{'MB/s':>8}{'zip MB':>9}{'parts':>7}"
            f"{'maxrss MB (export; +upload)':>30}",
            flush=True,
        )
        for fmt in formats:
            r = run_child(
                [
                    "--db-name",
                    db,
                    "--child",
                    f"s3:{fmt}",
                    "--dataset",
                    name,
                    "--endpoint",
                    endpoint,
                    "--bucket",
                    bucket,
                ]
            )
            assert r["stored_bytes"] == r["bytes"], "the object holds the whole archive"
            rate = r["bytes"] / 2**20 / r["upload_seconds"]
            print(
                f"{fmt:<14}{r['export_seconds']:>9.1f}{r['upload_seconds']:>10.1f}{rate:>8.1f}"
                f"{r['bytes'] / 2**20:>9.1f}{r['parts']:>7}{r['maxrss_export_mb']:>14.0f}; {r['maxrss_mb']:.0f}",
                flush=True,
            )
    finally:
        server.stop()


def bench_parallel(db: str, name: str, fmt: str) -> None:
    """One export alone, then two of the same at once: if the pair takes about twice as long, a second worker
    process buys nothing on this machine (the cores, PostgreSQL included, are already busy)."""
    args = ["--db-name", db, "--child", f"export:{fmt}", "--dataset", name]
    t0 = time.perf_counter()
    run_child(args)
    alone = time.perf_counter() - t0
    t0 = time.perf_counter()
    pair = [start_child(args), start_child(args)]
    for p in pair:
        p.communicate()
    both = time.perf_counter() - t0
    if any(p.returncode for p in pair):
        raise SystemExit(f"an export of the pair failed: exit codes {[p.returncode for p in pair]}")
    print(
        f"{fmt} of {name}: one process {alone:.1f} s; two at once {both:.1f} s; speed-up from splitting the "
        f"work in two: {2 * alone / both:.2f}x (2.00x = perfect)",
        flush=True,
    )


def child_stats(name: str, repeat: int) -> dict:
    from django.contrib.auth.models import Group, User
    from django.test import Client

    from annotation.models import Dataset
    from benchmark import reports
    from benchmark.models import Report

    dataset = Dataset.objects.get(name=name)
    user, _ = User.objects.get_or_create(username=ORGANIZER)
    user.groups.add(Group.objects.get_or_create(name="organizers")[0])
    dataset.organizers.add(user)
    client = Client()
    client.force_login(user)
    out = {}
    for label, url in (
        ("statistics", f"/api/v1/datasets/{dataset.pk}/statistics"),
        ("class-statistics", f"/api/v1/datasets/{dataset.pk}/class-statistics"),
    ):
        Report.objects.filter(dataset=dataset).delete()
        t0 = time.perf_counter()
        first = client.get(url)  # no report yet: computed when the request commits (no broker here)
        compute = time.perf_counter() - t0
        if first.status_code == 202:
            first = client.get(url)
        assert first.status_code == 200, (url, first.status_code, first.content[:300])
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            assert client.get(url).status_code == 200
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        out[label] = {
            "compute_s": compute,
            "p50_ms": statistics.median(times),
            "p99_ms": times[min(len(times) - 1, round(0.99 * (len(times) - 1)))],
            "bytes": len(first.content),
        }
    del reports
    out["maxrss_mb"] = maxrss_mb()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--per-image", type=int, default=3)
    parser.add_argument("--formats", default="coco,voc,yolo,ilsvrc")
    parser.add_argument("--db-name", default="crowdlabel_bench_export_hx")
    parser.add_argument("--s3", action="store_true", help="Upload each export's zip to moto's S3 server.")
    parser.add_argument("--parallel", action="store_true", help="Two export processes at once against one.")
    parser.add_argument("--stats", action="store_true", help="Statistics endpoints from kept reports.")
    parser.add_argument("--no-exports", action="store_true", help="Skip the local export runs.")
    parser.add_argument("--no-json", action="store_true", help="Skip the json.dump reference.")
    parser.add_argument(
        "--to",
        choices=("dir", "zip", "both"),
        default="dir",
        help="Export to a directory, to a zip (as export jobs do), or both, one after the other.",
    )
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="10,000 and 100,000 images")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--dataset", help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    parser.add_argument("--bucket", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        setup_django(args.db_name)
        kind, _, fmt = args.child.partition(":")
        if kind == "json":
            result = child_json(args.dataset)
        elif kind in ("export", "zip"):
            result = child_export(args.dataset, fmt, archive=kind == "zip")
        elif kind == "s3":
            result = child_s3(args.dataset, fmt, args.endpoint, args.bucket)
        else:
            result = child_stats(args.dataset, args.repeat)
        print(json.dumps(result))
        return
    if args.quick:
        args.sizes = "10000,100000"
    sizes = [int(s) for s in args.sizes.split(",")]
    formats = args.formats.split(",")
    ensure_database(args.db_name)
    setup_django(args.db_name)
    from django.core.management import call_command
    from export_seed import seed

    call_command("migrate", verbosity=0)
    for n in sizes:
        name = seed(n, args.per_image)
        print(
            f"\n== {n:,} images, {n * args.per_image:,} final boxes, 80 classes, no image files "
            f"(PostgreSQL, {name})",
            flush=True,
        )
        if not args.no_exports:
            targets = {"dir": ["export"], "zip": ["zip"], "both": ["export", "zip"]}[args.to]
            bench_exports(args.db_name, name, formats, with_json=not args.no_json, targets=targets)
        if args.s3:
            bench_s3(args.db_name, name, formats)
        if args.parallel:
            bench_parallel(args.db_name, name, formats[0])
        if args.stats:
            r = run_child(
                [
                    "--db-name",
                    args.db_name,
                    "--child",
                    "stats",
                    "--dataset",
                    name,
                    "--repeat",
                    str(args.repeat),
                ]
            )
            for label in ("statistics", "class-statistics"):
                s = r[label]
                print(
                    f"{label:<18} report computed in {s['compute_s']:.1f} s; kept report served p50 "
                    f"{s['p50_ms']:.1f} ms, p99 {s['p99_ms']:.1f} ms ({s['bytes']:,} bytes)",
                    flush=True,
                )
            print(f"stats process maxrss {r['maxrss_mb']:.0f} MB", flush=True)
    print(
        "\nmaxrss is each measuring process's own peak RSS (VmHWM; the json.dump reference's includes the "
        "content it dumps); times are wall-clock on a shared machine."
    )


if __name__ == "__main__":
    main()
