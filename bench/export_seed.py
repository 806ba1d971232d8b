"""Seeding for the export scale bench: one dataset of N images with K final boxes each, split 80/10/10 by a
frozen split version, loaded with COPY and server-side INSERT ... SELECT (what the review gate and the
overlap scan would have written: an overlap check and a final box per accepted box)."""

from __future__ import annotations

import time

N_CLASSES = 80


def seed(n_images: int, per_image: int) -> str:
    """A dataset named after its size, filled unless it already exists; returns its name."""
    import numpy as np
    from django.db import connection, transaction
    from pg_seed import copy_boxes, copy_images

    from annotation.models import Dataset
    from hierarchy.models import Concept

    name = f"scale-{n_images}-{per_image}"
    if Dataset.objects.filter(name=name).exists():
        return name
    t0 = time.perf_counter()
    rng = np.random.default_rng(n_images)
    n_boxes = n_images * per_image
    with transaction.atomic():
        concepts = np.asarray(
            [
                Concept.objects.get_or_create(wnid=f"n9{k:07d}", defaults={"name": f"class {k}"})[0].pk
                for k in range(N_CLASSES)
            ]
        )
        dataset = Dataset.objects.create(name=name)
        with connection.cursor() as cursor:
            image_ids = copy_images(
                cursor, dataset.pk, n_images, lambda sha: f"datasets/{dataset.pk}/{sha[:2]}/{sha}.jpg"
            )
            owner = np.repeat(image_ids, per_image)
            cls = concepts[rng.integers(0, N_CLASSES, n_boxes)]
            copy_boxes(cursor, owner, cls, rng, provenance="worker")
            cursor.execute(
                "INSERT INTO review_overlapcheck (box_id, checked_at) SELECT b.id, now() FROM annotation_box b "
                "JOIN annotation_image i ON i.id = b.image_id WHERE i.dataset_id = %s",
                [dataset.pk],
            )
            cursor.execute(
                "INSERT INTO annotation_finalbox (dataset_id, image_id, concept_id, box_id, x1, y1, x2, y2, "
                "finalized_at) SELECT %s, b.image_id, b.concept_id, b.id, b.x1, b.y1, b.x2, b.y2, now() "
                "FROM annotation_box b JOIN annotation_image i ON i.id = b.image_id WHERE i.dataset_id = %s",
                [dataset.pk, dataset.pk],
            )
            cursor.execute(
                "INSERT INTO benchmark_splitversion (dataset_id, number, seed, ratios, source_rules, manifest, "
                "frozen, created_at) VALUES (%s, 1, 0, %s, '{}', '{}', true, now()) RETURNING id",
                [dataset.pk, '{"train": 0.8, "val": 0.1, "test": 0.1}'],
            )
            version_id = cursor.fetchone()[0]
            cursor.execute(
                "INSERT INTO benchmark_imagesplit (version_id, image_id, split) SELECT %s, id, "
                "CASE id %% 10 WHEN 0 THEN 'test' WHEN 1 THEN 'val' ELSE 'train' END "
                "FROM annotation_image WHERE dataset_id = %s",
                [version_id, dataset.pk],
            )
    with connection.cursor() as cursor:
        for table in ("annotation_image", "annotation_box", "annotation_finalbox", "benchmark_imagesplit"):
            cursor.execute(f"ANALYZE {table}")
    print(
        f"seeded {n_images:,} images and {n_boxes:,} final boxes in {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    return name
