"""Bulk seeding for the PostgreSQL benches: many image rows in one COPY, their ids read back in order."""

from __future__ import annotations

from collections.abc import Callable


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
