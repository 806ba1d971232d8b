"""Each assignment names its task's dataset (written with the row from now on), filled here for the rows already
there, and indexed with the worker and the row's recency for one worker's latest answers in one dataset
(organize/worker_history.py).

Written for a queue that keeps serving while it runs (not atomic): adding the nullable column is one quick
statement; the fill runs in batches of ids, each its own short transaction, so no lease or submit waits on
more than one batch's rows (a single UPDATE of 20,000,000 assignments held the table for the whole of it); the
index is built CONCURRENTLY on PostgreSQL. Rows leased meanwhile by processes still running the code before
this migration are caught by a last pass over the ids above the first pass's end."""

from django.db import migrations, models, transaction

BATCH = 50_000
INDEX = "assignment_worker_dataset_idx"
# Portable (PostgreSQL and SQLite): a correlated subquery rather than UPDATE ... FROM.
FILL = (
    "UPDATE annotation_assignment SET dataset_id = "
    "(SELECT t.dataset_id FROM annotation_task t WHERE t.id = annotation_assignment.task_id) "
    "WHERE dataset_id IS NULL AND id >= %s AND id < %s"
)


def dataset_fill(apps, schema_editor):
    connection = schema_editor.connection

    def span(after: int) -> tuple[int, int] | None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT min(id), max(id) FROM annotation_assignment WHERE dataset_id IS NULL AND id > %s",
                [after],
            )
            lo, hi = cursor.fetchone()
        return None if lo is None else (lo, hi)

    done = 0
    for _ in range(2):  # the second pass: rows written by the old code during the first
        found = span(done)
        if found is None:
            return
        lo, hi = found
        for start in range(lo, hi + 1, BATCH):
            with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
                cursor.execute(FILL, [start, start + BATCH])
        done = hi


def index_create(apps, schema_editor):
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    schema_editor.execute(
        f"CREATE INDEX {concurrently}IF NOT EXISTS {INDEX} ON annotation_assignment (worker_id, dataset_id, id DESC)"
    )


def index_drop(apps, schema_editor):
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    schema_editor.execute(f"DROP INDEX {concurrently}IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("annotation", "0024_worker_stage_tally"),
        ("crowd", "0006_invitation_and_study_link_datasets"),
    ]

    operations = [
        migrations.AddField(
            model_name="assignment",
            name="dataset",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=models.deletion.PROTECT,
                related_name="+",
                to="annotation.dataset",
            ),
        ),
        migrations.RunPython(dataset_fill, migrations.RunPython.noop),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(
                    model_name="assignment",
                    index=models.Index(fields=["worker", "dataset", "-id"], name=INDEX),
                )
            ],
            database_operations=[migrations.RunPython(index_create, index_drop)],
        ),
    ]
