"""Filling the queue's big tables for bench/queue_scale.py: rows cloned by COPY from templates the real services
made, so every column a lease, a submit or an organizer page reads holds what the platform writes.

One finished binary vote (a task with its consensus question, two submitted answers with their votes, the
decision and the final label) and one live task (open, with its open question) are made through the real code
path in the first dataset; the fill then COPYs clones of those rows with new ids, datasets, images, concepts,
workers and times, spread over the datasets in turn (task `j` goes to dataset `j % n_datasets`), the newest
`live` of them left open. Foreign keys hold by construction: the fill's own session skips their triggers
(`session_replication_role = replica`, PostgreSQL's own bulk-load switch, a superuser's), so a row costs its
index entries and not a lookup per foreign key. Each COPY commits on its own, a chunk at a time.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import numpy as np

CHUNK = 100_000  # rows per COPY (one transaction each)
FILL_DAYS = 60  # the finished history spans this many days before the fill; the newest rows are live


def copy_text(value: str | None) -> str:
    """A value in COPY's text format (NULL as \\N)."""
    if value is None:
        return r"\N"
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


@dataclass
class Template:
    """One row of `table` as text, cloned with the `varying` columns filled per row."""

    table: str
    row: dict[str, str | None]

    def copy_sql(self) -> str:
        return f"COPY {self.table} ({', '.join(self.row)}) FROM STDIN"

    def line_format(self, varying: tuple[str, ...]) -> str:
        missing = set(varying) - set(self.row)
        if missing:
            raise ValueError(f"{self.table} has no column(s) {sorted(missing)}")
        # Constant values are written into the line's %-format, so their % are doubled.
        constant = {c: copy_text(v).replace("%", "%%") for c, v in self.row.items() if c not in varying}
        return "\t".join(constant.get(c, "%s") for c in self.row) + "\n"


def template_read(cursor, table: str, where: str, params: tuple) -> list[Template]:
    """The rows of `table` matching `where`, each column as PostgreSQL's own text for it."""
    cursor.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s ORDER BY ordinal_position",
        (table,),
    )
    columns = [r[0] for r in cursor.fetchall()]
    cursor.execute(
        f"SELECT {', '.join(f'{c}::text' for c in columns)} FROM {table} WHERE {where} ORDER BY id", params
    )
    return [Template(table, dict(zip(columns, row, strict=True))) for row in cursor.fetchall()]


@dataclass
class Templates:
    image: Template
    done_task: Template
    live_task: Template
    done_question: Template
    live_question: Template
    assignments: list[Template]  # the finished task's submitted answers, in order
    votes: list[Template]  # their votes, same order
    decisions: list[Template]
    final_label: Template


def templates_read(cursor, done_task_id: int, live_task_id: int) -> Templates:
    def one(table, where, params):
        rows = template_read(cursor, table, where, params)
        if len(rows) != 1:
            raise SystemExit(f"template: {len(rows)} rows of {table} where {where} {params}, expected 1")
        return rows[0]

    done_q = one("consensus_question", "task_id = %s", (done_task_id,))
    assignments = template_read(
        cursor, "annotation_assignment", "task_id = %s AND state = 'submitted'", (done_task_id,)
    )
    votes = template_read(cursor, "consensus_vote", "question_id = %s", (int(done_q.row["id"]),))
    if not assignments or [v.row["assignment_id"] for v in votes] != [a.row["id"] for a in assignments]:
        raise SystemExit("template: the finished task's votes do not match its answers one to one")
    return Templates(
        image=one("annotation_image", "id = %s", (int(done_q.row["image_id"]),)),
        done_task=one("annotation_task", "id = %s", (done_task_id,)),
        live_task=one("annotation_task", "id = %s", (live_task_id,)),
        done_question=done_q,
        live_question=one("consensus_question", "task_id = %s", (live_task_id,)),
        assignments=assignments,
        votes=votes,
        decisions=template_read(
            cursor, "consensus_questiondecision", "question_id = %s", (int(done_q.row["id"]),)
        ),
        final_label=one(
            "annotation_finallabel",
            "image_id = %s AND concept_id = %s",
            (int(done_q.row["image_id"]), int(done_q.row["concept_id"])),
        ),
    )


def next_ids(cursor, tables: list[str]) -> dict[str, int]:
    found = {}
    for table in tables:
        cursor.execute(f"SELECT COALESCE(max(id), 0) + 1 FROM {table}")
        found[table] = cursor.fetchone()[0]
    return found


def sequences_advance(cursor, tables: list[str]) -> None:
    """Move each table's id sequence past the ids the fill wrote itself."""
    for table in tables:
        cursor.execute(
            f"SELECT setval(pg_get_serial_sequence(%s, 'id'), (SELECT COALESCE(max(id), 1) FROM {table}))",
            (table,),
        )


@contextmanager
def indexes_set_aside(cursor, tables: list[str], progress=print):
    """Drop the tables' secondary indexes and unique constraints for the block, then build them again from
    their own definitions (PostgreSQL's advice for a bulk load: one sorted build beats millions of inserts).
    Primary keys stay (the fill writes ids in order, at the right edge), and so does anything another
    constraint depends on."""
    cursor.execute(
        "SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c "
        "WHERE c.contype = 'u' AND c.conrelid::regclass::text = ANY(%s) "
        "AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.refobjid = c.conindid AND d.deptype = 'n')",
        (tables,),
    )
    constraints = cursor.fetchall()
    cursor.execute(
        "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i "
        "WHERE i.indrelid::regclass::text = ANY(%s) AND NOT i.indisprimary "
        "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)",
        (tables,),
    )
    indexes = cursor.fetchall()
    for table, name, _ in constraints:
        cursor.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for name, _ in indexes:
        cursor.execute(f"DROP INDEX {name}")
    try:
        yield
    finally:
        t0 = time.perf_counter()
        cursor.execute("SET maintenance_work_mem = '512MB'")  # this session's sorts only
        for _, definition in indexes:
            cursor.execute(definition)
        for table, name, definition in constraints:
            cursor.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
        cursor.execute("RESET maintenance_work_mem")
        progress(
            f"    {len(indexes)} indexes and {len(constraints)} unique constraints built again in "
            f"{time.perf_counter() - t0:.0f} s"
        )


def _copy(cursor, template: Template, varying: tuple[str, ...], columns: list[list]) -> None:
    """COPY one clone of `template` per row of `columns` (the values of `varying`, in that order)."""
    fmt = template.line_format(varying)
    ordered = [columns[varying.index(c)] for c in template.row if c in varying]  # the table's column order
    with cursor.copy(template.copy_sql()) as copy:
        copy.write("".join(fmt % values for values in zip(*ordered, strict=True)))


def _times(newest: np.datetime64, ages_s: np.ndarray) -> list[str]:
    return [
        s + "+00" for s in np.datetime_as_string(newest - ages_s.astype("timedelta64[s]"), unit="s").tolist()
    ]


@dataclass
class Plan:
    """What one fill adds: `n_new` tasks, the newest `live` of them left open."""

    n_new: int
    live: int  # how many of the newest new tasks stay open
    dataset_ids: list[int]
    concept_ids: list[int]
    worker_ids: list[int]
    payloads: dict[int, str]  # a task's payload by concept, as the services write it


def fill(
    conn, templates: Templates, plan: Plan, now: np.datetime64, rebuild_indexes: bool, progress=print
) -> dict[str, int]:
    """COPY the plan's images, tasks, questions, answers, votes, decisions and final labels; returns the rows
    written per table. `conn` is a psycopg connection of its own, in autocommit. With `rebuild_indexes`, the
    tables' secondary indexes are set aside during the COPY and built again after it."""
    tables = [
        "annotation_image",
        "annotation_task",
        "consensus_question",
        "annotation_assignment",
        "consensus_vote",
        "consensus_questiondecision",
        "annotation_finallabel",
    ]
    written = dict.fromkeys(tables, 0)
    with conn.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        cursor.execute("SET synchronous_commit = off")
        ids = next_ids(cursor, tables)
        with indexes_set_aside(cursor, tables, progress) if rebuild_indexes else nullcontext():
            _rows_copy(cursor, templates, plan, now, ids, written, progress)
        sequences_advance(cursor, tables)
        cursor.execute("SET session_replication_role = DEFAULT")
    return written


def _rows_copy(
    cursor, templates: Templates, plan: Plan, now, ids: dict[str, int], written: dict, progress
) -> None:
    n_ds, n_c = len(plan.dataset_ids), len(plan.concept_ids)
    # Images: per dataset, one image per n_c tasks (each task asks one concept of one image).
    per_ds = -(-plan.n_new // n_ds)
    img_per_ds = -(-per_ds // n_c)
    first_img = ids["annotation_image"]
    n_img = img_per_ds * n_ds
    for lo in range(0, n_img, CHUNK):
        g = np.arange(lo, min(n_img, lo + CHUNK))
        image_ids = first_img + g
        _copy(
            cursor,
            templates.image,
            ("id", "dataset_id", "file", "original_name", "sha256"),
            [
                image_ids.tolist(),
                [plan.dataset_ids[d] for d in (g % n_ds).tolist()],
                [f"scale/{s:x}.jpg" for s in image_ids.tolist()],
                [f"{s}.jpg" for s in image_ids.tolist()],
                [f"{s:064x}" for s in image_ids.tolist()],  # unique: ids are
            ],
        )
        written["annotation_image"] += len(g)
    span_s = FILL_DAYS * 86_400
    n_answers = len(templates.assignments)
    done_until = plan.n_new - plan.live
    for lo in range(0, plan.n_new, CHUNK):
        j = np.arange(lo, min(plan.n_new, lo + CHUNK))
        d, k = j % n_ds, j // n_ds
        image_ids = (first_img + (k // n_c) * n_ds + d).tolist()
        concept_ix = (k % n_c + d) % n_c  # datasets start their concepts at different places
        concepts = [plan.concept_ids[c] for c in concept_ix.tolist()]
        datasets = [plan.dataset_ids[x] for x in d.tolist()]
        task_ids = (ids["annotation_task"] + j).tolist()
        question_ids = (ids["consensus_question"] + j).tolist()
        ages = (span_s * (plan.n_new - j) // max(1, plan.n_new)).astype(np.int64)
        created = _times(now, ages + 300)
        decided = _times(now, ages)
        payloads = [plan.payloads[c] for c in concepts]
        done = j < done_until
        for template_task, template_q, mask in (
            (templates.done_task, templates.done_question, done),
            (templates.live_task, templates.live_question, ~done),
        ):
            if not mask.any():
                continue
            sel = np.flatnonzero(mask).tolist()
            pick = lambda xs, sel=sel: [xs[i] for i in sel]  # noqa: E731
            _copy(
                cursor,
                template_task,
                ("id", "dataset_id", "image_id", "concept_id", "payload", "created_at", "updated_at"),
                [
                    pick(task_ids),
                    pick(datasets),
                    pick(image_ids),
                    pick(concepts),
                    [copy_text(p) for p in pick(payloads)],
                    pick(created),
                    pick(decided),
                ],
            )
            q_varying = ["id", "dataset_id", "image_id", "concept_id", "task_id", "created_at"]
            q_columns = [
                pick(question_ids),
                pick(datasets),
                pick(image_ids),
                pick(concepts),
                pick(task_ids),
            ]
            q_columns.append(pick(created))
            if template_q is templates.done_question:
                q_varying.append("decided_at")
                q_columns.append(pick(decided))
            _copy(cursor, template_q, tuple(q_varying), q_columns)
        written["annotation_task"] += len(j)
        written["consensus_question"] += len(j)
        sel = np.flatnonzero(done)
        if len(sel) == 0:
            continue
        # Two (or the template's count of) distinct workers per finished task.
        n_w = len(plan.worker_ids)
        # A multiplicative hash spreads each dataset's answers over every worker (j % n_datasets picks the
        # dataset, so a plain j % n_workers would give a dataset's answers to a few workers only).
        first_w = ((j[sel] * 2654435761) % 2**32 >> 8) % n_w
        workers = [
            ((first_w + a * (1 + j[sel] % (n_w - 1))) % n_w) if a else first_w for a in range(n_answers)
        ]
        for a, (t_assign, t_vote) in enumerate(zip(templates.assignments, templates.votes, strict=True)):
            a_ids = (ids["annotation_assignment"] + j[sel] * n_answers + a).tolist()
            w = [plan.worker_ids[x] for x in workers[a].tolist()]
            leased = _times(now, ages[sel] + 200 - 60 * a)
            submitted = _times(now, ages[sel] + 180 - 60 * a)
            chosen = [task_ids[i] for i in sel.tolist()]
            _copy(
                cursor,
                t_assign,
                (
                    "id",
                    "task_id",
                    "dataset_id",
                    "worker_id",
                    "leased_at",
                    "expires_at",
                    "submitted_at",
                    "idempotency_key",
                ),
                [
                    a_ids,
                    chosen,
                    [datasets[i] for i in sel.tolist()],
                    w,
                    leased,
                    submitted,
                    submitted,
                    [f"fill-{x}" for x in a_ids],
                ],
            )
            _copy(
                cursor,
                t_vote,
                ("id", "question_id", "worker_id", "assignment_id", "created_at"),
                [
                    (ids["consensus_vote"] + j[sel] * n_answers + a).tolist(),
                    [question_ids[i] for i in sel.tolist()],
                    w,
                    a_ids,
                    submitted,
                ],
            )
            written["annotation_assignment"] += len(sel)
            written["consensus_vote"] += len(sel)
        chosen_q = [question_ids[i] for i in sel.tolist()]
        at = [decided[i] for i in sel.tolist()]
        for n, t_decision in enumerate(templates.decisions):
            _copy(
                cursor,
                t_decision,
                ("id", "question_id", "created_at"),
                [
                    (ids["consensus_questiondecision"] + j[sel] * len(templates.decisions) + n).tolist(),
                    chosen_q,
                    at,
                ],
            )
            written["consensus_questiondecision"] += len(sel)
        _copy(
            cursor,
            templates.final_label,
            ("id", "dataset_id", "image_id", "concept_id", "updated_at"),
            [
                (ids["annotation_finallabel"] + j[sel]).tolist(),
                [datasets[i] for i in sel.tolist()],
                [image_ids[i] for i in sel.tolist()],
                [concepts[i] for i in sel.tolist()],
                at,
            ],
        )
        written["annotation_finallabel"] += len(sel)
        if (lo // CHUNK) % 10 == 9:
            progress(f"    {lo + len(j):,} of {plan.n_new:,} tasks copied")


def payloads_by_concept(concepts, question_text) -> dict[int, str]:
    """Each concept's task payload as the services write it ({"question": wording}), as JSON text."""
    return {c.pk: json.dumps({"question": question_text(c.name)}) for c in concepts}
