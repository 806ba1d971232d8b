"""Bulk seeding for the PostgreSQL benches: many image rows in one COPY, their ids read back in order."""

from __future__ import annotations

import os
from collections.abc import Callable

# The PostgreSQL server the benches use (their databases are named per bench).
PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")


def ensure_database(db_name: str) -> None:
    """Create the bench's database on `PG` unless it exists."""
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db_name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{db_name}"')


def setup_django(db_name: str) -> None:
    """Point Django at the bench's database on `PG` and set it up."""
    os.environ["DATABASE_URL"] = f"{PG}/{db_name}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def copy_images(cursor, dataset_id: int, n_images: int, path_of: Callable[[str], str]):
    """COPY `n_images` 640x480 image rows into the dataset (sha256 = the row number in hex, `path_of(sha)` the
    stored file name) and return their ids, in order, as a numpy array."""
    import numpy as np

    with cursor.copy(
        "COPY annotation_image (dataset_id, file, original_name, width, height, sha256, phash, source, "
        "created_at) FROM STDIN"
    ) as copy:
        for i in range(n_images):
            sha = f"{i:064x}"
            copy.write_row(
                (dataset_id, path_of(sha), f"{i}.jpg", 640, 480, sha, "0" * 16, "", "2025-01-01T00:00:00Z")
            )
    cursor.execute("SELECT id FROM annotation_image WHERE dataset_id = %s ORDER BY id", (dataset_id,))
    return np.array([r[0] for r in cursor.fetchall()])


def copy_boxes(cursor, owner, concept, rng, *, provenance: str | None = None) -> None:
    """COPY one accepted box per entry of `owner` (image ids) with the class `concept` (same length), at random
    places and sizes of a 640x480 image drawn from `rng`; `provenance` sets that column when given."""
    n_boxes = len(owner)
    x1 = rng.uniform(0, 500, n_boxes).round(2)
    y1 = rng.uniform(0, 350, n_boxes).round(2)
    x2 = (x1 + rng.uniform(5, 140, n_boxes)).round(2)
    y2 = (y1 + rng.uniform(5, 130, n_boxes)).round(2)
    columns = "image_id, concept_id, x1, y1, x2, y2, state, created_at"
    tail: tuple[str, ...] = ("accepted", "2025-01-01T00:00:00Z")
    if provenance is not None:
        columns, tail = columns + ", provenance", (*tail, provenance)
    with cursor.copy(f"COPY annotation_box ({columns}) FROM STDIN") as copy:
        for row in zip(
            owner.tolist(), concept.tolist(), x1.tolist(), y1.tolist(), x2.tolist(), y2.tolist(), strict=True
        ):
            copy.write_row((*row, *tail))


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB: VmHWM of its own address space. Not `ru_maxrss`: on Linux a
    child started by subprocess reports at least its parent's peak there (the memory it was forked from counts
    towards it), so a measuring child of a bench that had just seeded a million rows reported the seeding's."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
