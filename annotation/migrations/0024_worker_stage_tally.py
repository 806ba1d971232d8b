"""Submitted answers and worker-seconds per dataset, worker and stage for a worker's history, filled from the
existing answers (the recount of annotation.counters, over the historical models): a row for every worker and
stage with a submitted or withdrawn answer in the dataset."""

from datetime import timedelta

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, Sum, Value
from django.db.models.functions import Coalesce, NullIf


def worker_stage_tally_fill(apps, schema_editor):
    Assignment = apps.get_model("annotation", "Assignment")
    WorkerStageTally = apps.get_model("annotation", "WorkerStageTally")
    submitted = Q(state="submitted")
    spent = ExpressionWrapper(F("submitted_at") - F("leased_at"), output_field=DurationField())
    rows = (
        Assignment.objects.filter(state__in=("submitted", "withdrawn"))
        .values("task__dataset_id", "worker_id", stage=Coalesce(NullIf("task__topic", Value("")), "task__kind"))
        .annotate(n=Count("id", filter=submitted), spent=Sum(spent, filter=submitted))
        .order_by()
    )
    WorkerStageTally.objects.bulk_create(
        (
            WorkerStageTally(
                dataset_id=r["task__dataset_id"],
                worker_id=r["worker_id"],
                stage=r["stage"],
                answers=r["n"],
                worker_microseconds=(r["spent"] or timedelta(0)) // timedelta(microseconds=1),
            )
            for r in rows.iterator()
        ),
        batch_size=1000,
    )


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0023_box_provenance'),
        ('crowd', '0006_invitation_and_study_link_datasets'),
    ]

    operations = [
        migrations.CreateModel(
            name='WorkerStageTally',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('stage', models.CharField(max_length=64)),
                ('answers', models.BigIntegerField(default=0)),
                ('worker_microseconds', models.BigIntegerField(default=0)),
                ('dataset', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='annotation.dataset')),
                ('worker', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='crowd.worker')),
            ],
            options={
                'ordering': ['id'],
                'constraints': [models.UniqueConstraint(fields=('dataset', 'worker', 'stage'), name='worker_stage_tally_unique_key')],
            },
        ),
        migrations.RunPython(worker_stage_tally_fill, migrations.RunPython.noop),
    ]
