"""Writes of the final labels, the one owner of what a dataset's labels are: each pipeline records its verdicts
on (image, class) pairs in the transaction of its decision, the review gate sets the finalized boxes, and the
precedence rule (`annotation.final_evidence`) decides each pair's label.

Writers: image verification and reviewed questions (`consensus.final_labels`), Algorithm 1
(`multilabel.labeling`), the fixed-majority vote (`consensus.binary_vote`), the review gate
(`review.final_boxes`) and a reviewer's "absent" on a box job (`review.box_jobs`). Readers: `benchmark.selectors`
(splits and exports read nothing else).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, connections, transaction
from django.utils import timezone

from .final_evidence import BOX, PRECEDENCE, evidence_entry, resolve
from .models import FinalBox, FinalLabel
from .queue import sqlrows

Pair = tuple[int, int]  # (image id, concept id)
_CHUNK = 500
_FIELDS = ["present", "source", "probability", "yes_count", "no_count", "box_count", "evidence", "updated_at"]


@dataclass(frozen=True)
class LabelVerdict:
    """One pipeline's verdict on one (image, class). `present=None` withdraws the pipeline's verdict (its
    question was reopened or sent back to review); `ref` names the facts behind it (a question id...)."""

    image_id: int
    concept_id: int
    present: bool | None
    yes: int = 0
    no: int = 0
    p: float | None = None
    ref: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FinalBoxRow:
    box_id: int
    image_id: int
    concept_id: int
    x1: float
    y1: float
    x2: float
    y2: float


def final_labels_record(
    *,
    dataset_id: int,
    source: str,
    verdicts: Iterable[LabelVerdict],
    writes: sqlrows.Writes | None = None,
) -> int:
    """Record `source`'s verdicts (the last one per pair counts) and re-decide those pairs' final labels, in
    the caller's transaction. Returns the number of pairs touched. With `writes` (a submit's), a new pair's
    row on PostgreSQL goes with them, and is merged with an existing row once they are sent; the rest is
    written now."""
    if source not in PRECEDENCE or source == BOX:
        raise ValueError(f"unknown label source {source!r}; boxes are set with final_boxes_set")
    entries: dict[Pair, dict[str, Any] | None] = {}
    for v in verdicts:
        entries[(v.image_id, v.concept_id)] = (
            None if v.present is None else evidence_entry(v.present, yes=v.yes, no=v.no, p=v.p, **v.ref)
        )
    return _apply(dataset_id, source, entries, writes)


def final_boxes_set(
    *, dataset_id: int, boxes: Iterable[FinalBoxRow], image_ids: Iterable[int] | None = None
) -> int:
    """Make the dataset's final boxes on `image_ids` (all its images when None) exactly `boxes`, and update the
    box evidence of every (image, class) whose count changed. Returns the number of box rows changed."""
    wanted = {b.box_id: b for b in boxes}
    with transaction.atomic():
        scope = FinalBox.objects.filter(dataset_id=dataset_id)
        if image_ids is not None:
            scope = scope.filter(image_id__in=list(image_ids))
        existing = {
            row[0]: FinalBoxRow(*row)
            for row in scope.select_for_update(no_key=True)
            .order_by("box_id")
            .values_list("box_id", "image_id", "concept_id", "x1", "y1", "x2", "y2")
        }
        gone = [pk for pk in existing if pk not in wanted]
        changed = [b for pk, b in wanted.items() if pk in existing and existing[pk] != b]
        new = [b for pk, b in wanted.items() if pk not in existing]
        FinalBox.objects.filter(box_id__in=gone).delete()
        # An upsert: a concurrent call (two syncs of one image: a decision and a scan) may insert the same box
        # after this one read; its row is then brought to what this call wants instead of a unique violation.
        # The evidence below is absolute (the pair's box count), so the last writer leaves it consistent.
        FinalBox.objects.bulk_create(
            (
                FinalBox(
                    dataset_id=dataset_id,
                    image_id=b.image_id,
                    concept_id=b.concept_id,
                    box_id=b.box_id,
                    x1=b.x1,
                    y1=b.y1,
                    x2=b.x2,
                    y2=b.y2,
                )
                for b in sorted(changed + new, key=lambda b: b.box_id)
            ),
            batch_size=_CHUNK,
            update_conflicts=True,
            unique_fields=["box"],
            update_fields=["dataset", "image", "concept", "x1", "y1", "x2", "y2"],
        )
        before = Counter((b.image_id, b.concept_id) for b in existing.values())
        after = Counter((b.image_id, b.concept_id) for b in wanted.values())
        entries: dict[Pair, dict[str, Any] | None] = {
            pair: (evidence_entry(True, boxes=after[pair]) if after[pair] else None)
            for pair in set(before) | set(after)
            if before[pair] != after[pair]
        }
        _apply(dataset_id, BOX, entries)
    return len(gone) + len(changed) + len(new)


def _apply(
    dataset_id: int,
    source: str,
    entries: dict[Pair, dict[str, Any] | None],
    writes: sqlrows.Writes | None = None,
) -> int:
    if not entries:
        return 0
    if connections[FinalLabel.objects.db].vendor == "postgresql":
        # New rows are inserted skipping any pair another transaction created meanwhile (ON CONFLICT DO
        # NOTHING waits for it to commit), and only those pairs go round again, now locked and updated: no
        # savepoint, which is two round trips on the submit that closes a vote.
        if len(entries) == 1:
            # One pair (a vote closing): it mostly has no row yet, so it is inserted first, one statement, and
            # locked and merged only when a row exists. (With several pairs, inserting first would lock new rows
            # before existing ones, the reverse of every other writer's order.)
            # With a submit's writes the insert goes with them, and the merge, when needed, once it is sent.
            [(pair, entry)] = entries.items()
            row = None if entry is None else _row_new(dataset_id, pair, {source: entry}, timezone.now())
            if row is not None:
                _insert_one(
                    connections[FinalLabel.objects.db],
                    row,
                    lambda: _merge(dataset_id, source, entries),
                    writes,
                )
                return 1
        _merge(dataset_id, source, entries)
        return len(entries)
    try:
        with transaction.atomic():
            _apply_once(dataset_id, source, entries)
    except IntegrityError:
        # Another transaction created one of these rows between our read and insert: it is committed and
        # visible now, so the second pass locks and updates it.
        with transaction.atomic():
            _apply_once(dataset_id, source, entries)
    return len(entries)


def _merge(dataset_id: int, source: str, entries: dict[Pair, dict[str, Any] | None]) -> None:
    """PostgreSQL: lock, merge and write the pairs' rows, again for any pair another transaction created
    meanwhile."""
    pending = entries
    for _attempt in range(3):
        pending = {pair: entries[pair] for pair in _apply_once(dataset_id, source, pending)}
        if not pending:
            return
    raise IntegrityError(f"final labels of {sorted(pending)} kept changing under this transaction")


def _apply_once(dataset_id: int, source: str, entries: dict[Pair, dict[str, Any] | None]) -> set[Pair]:
    """Lock, merge and write the pairs' rows. Returns the pairs whose new row another transaction created first
    (PostgreSQL only; elsewhere that is an IntegrityError)."""
    pairs = sorted(entries)
    rows = _lock(pairs)
    create: list[FinalLabel] = []
    update: list[FinalLabel] = []
    delete: list[int] = []
    now = timezone.now()
    for pair in pairs:
        row = rows.get(pair)
        evidence = dict(row.evidence) if row is not None else {}
        entry = entries[pair]
        if entry is None:
            evidence.pop(source, None)
        else:
            evidence[source] = entry
        resolved = resolve(evidence)
        if resolved is None:
            if row is not None:
                delete.append(row.pk)
            continue
        if row is None:
            row = FinalLabel(dataset_id=dataset_id, image_id=pair[0], concept_id=pair[1])
            create.append(row)
        else:
            update.append(row)
        _row_fill(row, resolved, evidence, now)
    if delete:
        FinalLabel.objects.filter(pk__in=delete).delete()
    if update:
        FinalLabel.objects.bulk_update(update, _FIELDS, batch_size=_CHUNK)
    if not create:
        return set()
    connection = connections[FinalLabel.objects.db]
    if connection.vendor != "postgresql":
        FinalLabel.objects.bulk_create(create, batch_size=_CHUNK)
        return set()
    created: set[Pair] = set()
    for start in range(0, len(create), _CHUNK):
        created |= _insert_skipping_conflicts(connection, create[start : start + _CHUNK])
    return {(row.image_id, row.concept_id) for row in create} - created


def _row_fill(row: FinalLabel, resolved, evidence: dict[str, Any], now) -> None:
    row.present, row.source, row.probability = resolved.present, resolved.source, resolved.probability
    row.yes_count, row.no_count, row.box_count = resolved.yes, resolved.no, resolved.boxes
    row.evidence, row.updated_at = evidence, now


def _row_new(dataset_id: int, pair: Pair, evidence: dict[str, Any], now) -> FinalLabel | None:
    """The unsaved row of a pair that has only this evidence, or None when it decides nothing."""
    resolved = resolve(evidence)
    if resolved is None:
        return None
    row = FinalLabel(dataset_id=dataset_id, image_id=pair[0], concept_id=pair[1])
    _row_fill(row, resolved, evidence, now)
    return row


def _insert_skipping_conflicts(connection, rows: list[FinalLabel]) -> set[Pair]:
    """INSERT the rows, skipping those whose (image, concept) exists (ON CONFLICT DO NOTHING); returns the pairs
    inserted. Values go through the fields' own conversion, as bulk_create's do."""
    sql, params = _insert_statement(connection, rows)
    # The batches of a recompute vary in length and run once, so they are not prepared.
    with connection.cursor() as cursor:
        cursor.execute(sql + " RETURNING image_id, concept_id", params)
        return {(image_id, concept_id) for image_id, concept_id in cursor.fetchall()}


def _insert_one(connection, row: FinalLabel, exists, writes: sqlrows.Writes | None) -> None:
    """INSERT one row skipping a conflict, as `_insert_skipping_conflicts` does: now, or with `writes` (a
    submit's); `exists()` runs, once it is sent, when the pair had a row already."""
    sql, params = _insert_statement(connection, [row])
    sqlrows.write(
        connection,
        FinalLabel._meta.db_table,
        sql,
        params,
        writes=writes,
        on_done=lambda inserted, _: inserted or exists(),
    )


def _insert_statement(connection, rows: list[FinalLabel]) -> tuple[str, list]:
    qn = connection.ops.quote_name
    fields = [f for f in FinalLabel._meta.concrete_fields if not f.primary_key]
    values = ", ".join(["(" + ", ".join(["%s"] * len(fields)) + ")"] * len(rows))
    sql = (
        f"INSERT INTO {qn(FinalLabel._meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) "
        f"VALUES {values} ON CONFLICT DO NOTHING"
    )
    params = [f.get_db_prep_save(getattr(row, f.attname), connection) for row in rows for f in fields]
    return sql, params


def _lock(pairs: list[Pair]) -> dict[Pair, FinalLabel]:
    """Lock the existing rows of these pairs, in (image, concept) order like every writer."""
    wanted = set(pairs)
    images = sorted({image for image, _ in pairs})
    concepts = sorted({concept for _, concept in pairs})
    found: dict[Pair, FinalLabel] = {}
    for start in range(0, len(images), _CHUNK):
        qs = (
            FinalLabel.objects.select_for_update(no_key=True)
            .filter(image_id__in=images[start : start + _CHUNK], concept_id__in=concepts)
            .order_by("image_id", "concept_id")
        )
        for row in qs:
            if (row.image_id, row.concept_id) in wanted:
                found[(row.image_id, row.concept_id)] = row
    return found
