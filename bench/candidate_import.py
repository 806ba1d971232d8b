"""Benchmark: candidate import throughput (images/s) from an HTTP server on loopback, and near-duplicate figures.

Serves N generated JPEGs from a threaded http.server on 127.0.0.1, imports a URL list of them through the whole
path (row parsing, SSRF checks, pooled downloads, ingestion with Pillow validation and hashing, pool rows) at
concurrency 1 (the reference) and 8, each into a fresh dataset; then imports resized and recompressed copies
and different pictures and counts near-duplicates found and false merges. Uses its own temporary SQLite
database and media folder. Run from the repository root: `python bench/candidate_import.py [--quick]`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
TMP = tempfile.mkdtemp(prefix="candidate-bench-")
os.environ["DATABASE_URL"] = f"sqlite:///{TMP}/bench.sqlite3"
os.environ["CROWDLABEL_MEDIA_ROOT"] = f"{TMP}/media"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

from annotation.models import Dataset, Image  # noqa: E402
from candidates import services  # noqa: E402
from candidates.fetch import PoolSettings, fetch_many  # noqa: E402
from candidates.models import Candidate  # noqa: E402
from hierarchy.models import Concept  # noqa: E402
from tests.annotation.imagefiles import encode, picture  # noqa: E402
from tests.candidates.server import Site  # noqa: E402


def run(site: Site, name: str, paths: list[str], concurrency: int) -> tuple[float, object]:
    settings.CROWDLABEL = {
        **settings.CROWDLABEL,
        "CANDIDATE_ALLOWED_HOSTS": [f"127.0.0.1:{site.port}"],
        "CANDIDATE_CONCURRENCY": concurrency,
        "CANDIDATE_HOST_INTERVAL_SECONDS": 0.0,
        "CANDIDATE_BATCH_ROWS": 10_000,
    }
    dataset = Dataset.objects.create(name=name)
    body = "url,concept,query\n" + "".join(f"{site.url(p)},n02084071,dog\n" for p in paths)
    start = time.perf_counter()
    job = services.candidate_import_create(dataset=dataset, name="list.csv", data=body.encode())
    job.refresh_from_db()  # eager Celery: the import ran when its transaction committed
    return time.perf_counter() - start, job


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="60 images instead of 300")
    args = parser.parse_args()
    n = 60 if args.quick else 300
    call_command("migrate", verbosity=0)
    Concept.objects.create(wnid="n02084071", name="dog, domestic dog")
    with Site() as site:
        paths = []
        for i in range(n):
            path = f"/img/{i}.jpg"
            site.image(path, encode(picture(1000 + i, (640, 480)), "JPEG", quality=88))
            paths.append(path)
        mean_kb = sum(len(site.routes[p][2]) for p in paths) / n / 1024
        print(
            f"{n} JPEGs of 640x480 ({mean_kb:.0f} kB mean) from a loopback server, one host, no politeness delay"
        )
        figures = {}
        for concurrency in (1, 8):
            seconds, job = run(site, f"c{concurrency}", paths, concurrency)
            figures[concurrency] = n / seconds
            print(
                f"  concurrency {concurrency}: {seconds:6.2f} s, {n / seconds:6.1f} images/s "
                f"({job.stored} stored, {job.failed} failed)"
            )
        print(
            f"  concurrency 8 vs 1: {figures[8] / figures[1]:.2f}x "
            "(one download at a time per host; the pool downloads while rows are ingested)"
        )
        limits, _ = services.limits_from_settings()
        start = time.perf_counter()
        got = sum(
            1
            for o in fetch_many(
                [site.url(p) for p in paths], limits, PoolSettings(concurrency=1, host_interval=0)
            )
            if o.fetched
        )
        seconds = time.perf_counter() - start
        print(
            f"  downloads alone (no ingestion), one host: {got / seconds:6.1f} images/s: ingestion is the bound"
        )
        # the politeness gate is per host: spread the same images over 8 "hosts" (8 allow-listed servers)
        sites = [Site().__enter__() for _ in range(8)]
        try:
            for k, extra in enumerate(sites):
                for i in range(k, n, 8):
                    extra.image(f"/img/{i}.jpg", site.routes[paths[i]][2])
            settings.CROWDLABEL = {
                **settings.CROWDLABEL,
                "CANDIDATE_ALLOWED_HOSTS": [f"127.0.0.1:{s.port}" for s in sites],
                "CANDIDATE_CONCURRENCY": 8,
            }
            dataset = Dataset.objects.create(name="hosts8")
            body = "url,concept,query\n" + "".join(
                f"{sites[i % 8].url(f'/img/{i}.jpg')},n02084071,dog\n" for i in range(n)
            )
            start = time.perf_counter()
            job = services.candidate_import_create(dataset=dataset, name="list.csv", data=body.encode())
            seconds = time.perf_counter() - start
            job.refresh_from_db()
            print(
                f"  8 hosts, concurrency 8: {seconds:6.2f} s, {n / seconds:6.1f} images/s "
                f"({job.stored} stored); vs one host at concurrency 1: {n / seconds / figures[1]:.2f}x"
            )
        finally:
            for extra in sites:
                extra.__exit__(None, None, None)

        # a re-run: every URL skipped, nothing downloaded
        hits = sum(site.hits.values())
        seconds, job = run(site, "c1-rerun", paths, 8)
        dataset = Dataset.objects.get(name="c1-rerun")
        rerun = services.candidate_import_create(
            dataset=dataset,
            name="list.csv",
            data=("url,concept\n" + "".join(f"{site.url(p)},n02084071\n" for p in paths)).encode(),
        )
        rerun.refresh_from_db()
        print(
            f"  re-run of the same list: {rerun.skipped} skipped, {rerun.stored} stored, "
            f"{sum(site.hits.values()) - hits - n} extra downloads"
        )

        # near duplicates: originals, then resized (0.5x, 1.5x) and recompressed (q=35) copies, and new pictures
        m = 20 if args.quick else 60
        dup_paths, kinds = [], {}
        for i in range(m):
            for kind, data in (
                ("original", encode(picture(5000 + i, (400, 300)), "JPEG", quality=90)),
                ("half", encode(picture(5000 + i, (200, 150)), "JPEG", quality=85)),
                ("bigger", encode(picture(5000 + i, (600, 450)), "JPEG", quality=85)),
                ("recompressed", encode(picture(5000 + i, (400, 300)), "JPEG", quality=35)),
                ("different", encode(picture(9000 + i, (400, 300)), "JPEG", quality=90)),
            ):
                path = f"/dup/{i}-{kind}.jpg"
                site.image(path, data)
                dup_paths.append(path)
                kinds[path] = (i, kind)
        settings.CROWDLABEL = {**settings.CROWDLABEL, "CANDIDATE_ALLOWED_HOSTS": [f"127.0.0.1:{site.port}"]}
        seconds, job = run(site, "dups", dup_paths, 8)
        dataset = Dataset.objects.get(name="dups")
        by_path = {
            c.url.split(str(site.port), 1)[1]: c.image
            for c in Candidate.objects.filter(dataset=dataset).select_related("image")
        }
        kept = {}
        for path, image in by_path.items():
            i, kind = kinds[path]
            kept.setdefault(i, {})[kind] = image.near_duplicate_of_id or image.pk
        copies = m * 3
        found = sum(
            1
            for i in range(m)
            for kind in ("half", "bigger", "recompressed")
            if kept[i][kind] == kept[i]["original"]
        )
        false_merges = sum(1 for i in range(m) if kept[i]["different"] == kept[i]["original"])
        stray = Image.objects.filter(dataset=dataset, near_duplicate_of__isnull=True).count()
        bigger_kept = sum(1 for i in range(m) if kept[i]["original"] == by_path[f"/dup/{i}-bigger.jpg"].pk)
        print(
            f"near duplicates ({m} pictures, {copies} resized/recompressed copies, {m} different pictures; "
            f"distance <= {settings.CROWDLABEL['NEAR_DUPLICATE_DISTANCE']} bits):"
        )
        print(f"  copies found {found}/{copies} ({found / copies:.1%}), false merges {false_merges}/{m}")
        print(f"  kept copies {stray} (ideal {2 * m}); the 600x450 copy kept in {bigger_kept}/{m} groups")
        print(f"  import of {len(dup_paths)} images with dedup: {len(dup_paths) / seconds:.1f} images/s")


if __name__ == "__main__":
    main()
