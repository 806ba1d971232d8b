"""Example images per concept and task kind: organizers attach what counts and what does not, checked like
ingested images; every task of that kind and concept carries their URLs, the same for gold and ordinary tasks
(the lookup knows only the dataset, the concept and the kind)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, connections, transaction
from django.utils import timezone

from config.urlids import id_url

from . import kinds
from .imagecheck import ImageRejected, check_image
from .models import ConceptExample, Dataset, ExamplePolarity, ExampleState
from .queue import sqlrows

# Beside a question a handful helps; a gallery would push the task off the screen.
MAX_SHOWN = 8


class ExampleRefused(ValueError):
    """The example cannot be added; the message says why."""


def example_add(
    *,
    dataset: Dataset,
    concept,
    kind: str,
    polarity: str,
    data: bytes,
    name: str,
    caption: str = "",
    user=None,
    size: int | None = None,
) -> ConceptExample:
    """Check the image as ingestion does (size, pixels, format, decodable) and store it as an example."""
    if kind not in kinds.names():
        raise ExampleRefused(f"unknown task kind {kind!r}; known kinds: {', '.join(kinds.names())}")
    if polarity not in ExamplePolarity.values:
        raise ExampleRefused(f"polarity must be one of {', '.join(ExamplePolarity.values)}")
    checked = example_check(dataset=dataset, data=data, name=name, size=size)
    shown = shown_examples(dataset.pk, concept.pk, kind)
    if len(shown) >= MAX_SHOWN:
        raise ExampleRefused(
            f"{MAX_SHOWN} examples are shown already for {concept.name} on {kind}: remove one first"
        )
    example = ConceptExample(
        dataset=dataset,
        concept=concept,
        kind=kind,
        polarity=polarity,
        caption=caption[:200],
        width=checked.width,
        height=checked.height,
        sha256=checked.sha256,
        created_by=user,
    )
    example.file.save(f"{name}.{checked.extension}", ContentFile(checked.data), save=False)
    try:
        with transaction.atomic():
            example.save()
    except IntegrityError:
        example.file.storage.delete(example.file.name)
        raise ExampleRefused(
            f"{name}: this image is an example of {concept.name} on {kind} already"
        ) from None
    except Exception:
        example.file.storage.delete(example.file.name)
        raise
    return example


def example_check(*, dataset: Dataset, data: bytes, name: str, size: int | None = None):
    """The checks of ingestion (size, pixels, frames, the dataset's formats, decodable); the checked image."""
    limits = settings.CROWDLABEL
    try:
        return check_image(
            data,
            max_bytes=limits["MAX_IMAGE_BYTES"],
            max_pixels=limits["MAX_IMAGE_PIXELS"],
            size=size,
            max_frames=limits["MAX_IMAGE_FRAMES"],
            max_frame_pixels=limits["MAX_FRAME_PIXELS"],
            formats=dataset.image_formats or None,
        )
    except ImageRejected as exc:
        raise ExampleRefused(f"{name}: {exc}") from None


def example_remove(*, example: ConceptExample) -> ConceptExample:
    """Stop showing the example (the row and its file stay). Removing a removed example changes nothing."""
    with transaction.atomic():
        example = ConceptExample.objects.select_for_update(no_key=True).get(pk=example.pk)
        if example.state != ExampleState.REMOVED:
            example.state = ExampleState.REMOVED
            example.removed_at = timezone.now()
            example.save(update_fields=["state", "removed_at"])
    return example


def shown_examples(dataset_id: int, concept_id: int | None, kind: str) -> list[ConceptExample]:
    """The shown examples of (dataset, concept, kind), what counts first.

    Every lease runs this, so it is a prepared statement written by hand (`annotation.queue.sqlrows`): building
    the same query through the ORM cost about a fifth of a whole next-task + submit cycle's CPU
    (bench/load.py), for a lookup that usually finds nothing."""
    if concept_id is None:
        return []
    connection = connections[ConceptExample.objects.db]
    columns = _example_columns()
    sql = (
        f"SELECT {columns.sql(connection)} FROM {connection.ops.quote_name(ConceptExample._meta.db_table)} e "
        "WHERE e.dataset_id = %s AND e.concept_id = %s AND e.kind = %s AND e.state = %s "
        "ORDER BY e.polarity DESC, e.id"
    )
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(sql, [dataset_id, concept_id, kind, str(ExampleState.SHOWN)])
        return [columns.build(connection, row) for row in cursor.fetchall()]


@functools.cache
def _example_columns() -> sqlrows.Columns:
    return sqlrows.Columns(ConceptExample, "e")


def task_examples(task, leased: Sequence[tuple] | None = None) -> list[dict]:
    """What a task's page shows of its examples: URLs, polarity, caption and size; nothing about the task.
    `leased`: the rows the lease statement selected with the task (`queue.Lease.examples`); without them they
    are looked up."""
    rows = leased
    if rows is None:
        shown = shown_examples(task.dataset_id, task.concept_id, task.kind)
        rows = [(e.pk, e.polarity, e.caption, e.width, e.height) for e in shown]
    return [
        {"url": id_url("example-file", pk), "polarity": polarity, "caption": caption, "width": w, "height": h}
        for pk, polarity, caption, w, h in rows
    ]
