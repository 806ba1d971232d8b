"""Submitted answers per dataset and worker for the organizer's People list, filled from the existing answers
(the recount of annotation.counters, over the historical models): a row for every worker with a submitted or
withdrawn answer in the dataset."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Count, Q


def worker_tally_fill(apps, schema_editor):
    Assignment = apps.get_model("annotation", "Assignment")
    WorkerTally = apps.get_model("annotation", "WorkerTally")
    rows = (
        Assignment.objects.filter(state__in=("submitted", "withdrawn"))
        .values("task__dataset_id", "worker_id")
        .annotate(n=Count("id", filter=Q(state="submitted")))
        .order_by()
    )
    WorkerTally.objects.bulk_create(
        (WorkerTally(dataset_id=r["task__dataset_id"], worker_id=r["worker_id"], answers=r["n"]) for r in rows),
        batch_size=1000,
    )


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0014_dataset_tally_and_usage_counters'),
        ('crowd', '0005_mturk_qualification_confirmation_spend'),
    ]

    operations = [
        migrations.CreateModel(
            name='WorkerTally',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('answers', models.BigIntegerField(default=0)),
                ('dataset', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='annotation.dataset')),
                ('worker', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='crowd.worker')),
            ],
            options={
                'ordering': ['id'],
                'constraints': [models.UniqueConstraint(fields=('dataset', 'worker'), name='worker_tally_unique_key')],
            },
        ),
        migrations.RunPython(worker_tally_fill, migrations.RunPython.noop),
    ]
