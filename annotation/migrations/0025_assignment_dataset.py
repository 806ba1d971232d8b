"""Each assignment names its task's dataset (written with the row from now on), filled here for the rows already
there, and indexed with the worker and the row's recency for one worker's latest answers in one dataset
(organize/worker_history.py). The fill is one UPDATE of every assignment (minutes at tens of millions of rows,
in the migration's transaction); the index is built after it."""

import django.db.models.deletion
from django.db import migrations, models

# Portable (PostgreSQL and SQLite): a correlated subquery rather than UPDATE ... FROM.
FILL = (
    "UPDATE annotation_assignment SET dataset_id = "
    "(SELECT t.dataset_id FROM annotation_task t WHERE t.id = annotation_assignment.task_id) "
    "WHERE dataset_id IS NULL"
)


class Migration(migrations.Migration):
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
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="annotation.dataset",
            ),
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop),
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(fields=["worker", "dataset", "-id"], name="assignment_worker_dataset_idx"),
        ),
    ]
