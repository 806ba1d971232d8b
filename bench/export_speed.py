"""Time and peak memory of exporting boxes from PostgreSQL to COCO and VOC, against a bare json.dump of the
same COCO content (already in memory) in the same run.

Usage: python bench/export_speed.py [--boxes 1000000] [--images 200000] [--quick]

Uses its own PostgreSQL database (crowdlabel_bench_export, created and migrated on first use; rows are bulk
loaded with COPY and kept for the next run). Each measurement runs in a fresh subprocess so its peak RSS (VmHWM,
`pg_seed.peak_rss_mb`) is its own; tracemalloc (Python allocations only) is taken in a separate run because it slows Python down.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from pg_seed import copy_boxes, copy_images, ensure_database, peak_rss_mb, setup_django  # noqa: E402

DB_NAME = "crowdlabel_bench_export"
N_CLASSES = 80


def populate(n_images: int, n_boxes: int) -> str:
    """A dataset named after its size, filled with COPY unless it already exists."""
    import numpy as np
    from django.core.management import call_command
    from django.db import connection, transaction

    from annotation.models import Dataset
    from hierarchy.models import Concept

    call_command("migrate", verbosity=0)
    name = f"bench-{n_images}-{n_boxes}"
    if Dataset.objects.filter(name=name).exists():
        return name
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    with transaction.atomic():
        concepts = [
            Concept.objects.get_or_create(wnid=f"n9{k:07d}", defaults={"name": f"class {k}"})[0].pk
            for k in range(N_CLASSES)
        ]
        dataset = Dataset.objects.create(name=name)
        with connection.cursor() as cursor:
            cursor.execute("SELECT nextval(pg_get_serial_sequence('annotation_image', 'id'))")
            image_ids = copy_images(
                cursor, dataset.pk, n_images, lambda sha: f"datasets/{dataset.pk}/{sha[:2]}/{sha}.jpg"
            )
            owner = image_ids[rng.integers(0, n_images, n_boxes)]
            cls = np.asarray(concepts)[rng.integers(0, N_CLASSES, n_boxes)]
            copy_boxes(cursor, owner, cls, rng)
        cursor = connection.cursor()
        cursor.execute("ANALYZE annotation_image")
        cursor.execute("ANALYZE annotation_box")
    print(
        f"loaded {n_images} images and {n_boxes} boxes with COPY in {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    return name


def measure(kind: str, name: str, trace: bool) -> dict:
    """One measurement in this process: 'coco', 'voc' (streamed exports) or 'json' (bare json.dump)."""
    import tracemalloc

    from annotation.models import Dataset
    from benchmark.exporters import ExportOptions, export
    from benchmark.selectors import DatasetSource

    dataset = Dataset.objects.get(name=name)
    source = DatasetSource(dataset, None)
    with tempfile.TemporaryDirectory(prefix="bench-export-") as scratch:
        out = Path(scratch) / "out"
        if kind == "json":
            # The same content, built in memory first (not timed): only json.dump is on the clock.
            categories = [
                {"id": c.id, "name": c.name, "supercategory": c.supercategory or c.name}
                for c in source.categories()
            ]
            images = [
                {"id": i.id, "file_name": i.file_name, "width": i.width, "height": i.height}
                for i in source.images("all")
            ]
            annotations = [
                {
                    "id": b.id,
                    "image_id": b.image_id,
                    "category_id": b.category_id,
                    "bbox": [b.x1, b.y1, b.x2 - b.x1, b.y2 - b.y1],
                    "area": (b.x2 - b.x1) * (b.y2 - b.y1),
                    "iscrowd": 0,
                }
                for b in source.boxes("all")
            ]
            content = {
                "info": {},
                "licenses": [],
                "categories": categories,
                "images": images,
                "annotations": annotations,
            }
        if trace:
            tracemalloc.start()
        t0 = time.perf_counter()
        if kind == "json":
            with open(Path(scratch) / "dump.json", "w") as f:
                json.dump(content, f)
        else:
            export(source, kind, out, ExportOptions(split="all", include_images=False))
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] if trace else None
        size = sum(p.stat().st_size for p in Path(scratch).rglob("*") if p.is_file())
    return {
        "kind": kind,
        "seconds": seconds,
        "tracemalloc_peak_mb": None if peak is None else peak / 2**20,
        "maxrss_mb": peak_rss_mb(),
        "bytes_written": size,
    }


def run_child(kind: str, name: str, trace: bool) -> dict:
    args = [sys.executable, __file__, "--child", kind, "--dataset", name] + (["--trace"] if trace else [])
    done = subprocess.run(args, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--boxes", type=int, default=1_000_000)
    parser.add_argument("--images", type=int, default=200_000)
    parser.add_argument("--quick", action="store_true", help="100,000 boxes over 20,000 images")
    parser.add_argument("--no-trace", action="store_true", help="Skip the tracemalloc runs.")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--dataset", help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        setup_django(DB_NAME)
        print(json.dumps(measure(args.child, args.dataset, args.trace)))
        return
    if args.quick:
        args.boxes, args.images = 100_000, 20_000
    ensure_database(DB_NAME)
    setup_django(DB_NAME)
    name = populate(args.images, args.boxes)
    print(
        f"{args.boxes:,} boxes over {args.images:,} images, {N_CLASSES} classes, from PostgreSQL; --no-images"
    )
    labels = {
        "json": "bare json.dump (in memory)",
        "coco": "COCO export (streamed)",
        "voc": "VOC export (streamed)",
    }
    print(
        f"{'run':<28}{'seconds':>9}{'x json.dump':>13}{'maxrss MB':>11}{'tracemalloc MB':>16}{'written MB':>12}"
    )
    base = None
    for kind in ("json", "coco", "voc"):
        # Printed as measured: the VOC run (one file per image) can take minutes on a busy disk.
        r = run_child(kind, name, False)
        peak = None if args.no_trace or kind == "voc" else run_child(kind, name, True)["tracemalloc_peak_mb"]
        base = base or r["seconds"]
        peak_text = f"{peak:.1f}" if peak is not None else "-"
        print(
            f"{labels[kind]:<28}{r['seconds']:>9.2f}{r['seconds'] / base:>13.2f}{r['maxrss_mb']:>11.0f}"
            f"{peak_text:>16}{r['bytes_written'] / 2**20:>12.1f}",
            flush=True,
        )
    print(
        "maxrss is the whole process (json.dump's includes the in-memory content it dumps); tracemalloc "
        "counts Python allocations during the timed step only."
    )


if __name__ == "__main__":
    main()
