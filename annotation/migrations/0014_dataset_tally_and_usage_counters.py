"""Per-dataset counters for the organizer's progress and cost pages, filled from the existing images, boxes, tasks
and answers (the recount of annotation.counters, over the historical models), and an index on the boxes'
creation time for the progress page's recent window."""

from datetime import timedelta

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, Sum, Value
from django.db.models.functions import Coalesce, NullIf


def counters_fill(apps, schema_editor):
    Box = apps.get_model("annotation", "Box")
    Task = apps.get_model("annotation", "Task")
    Assignment = apps.get_model("annotation", "Assignment")
    DatasetTally = apps.get_model("annotation", "DatasetTally")
    UsageCounter = apps.get_model("annotation", "UsageCounter")
    Image = apps.get_model("annotation", "Image")
    tally = {
        row["dataset_id"]: {"images": row["n"], "boxes_drawn": 0, "boxes_accepted": 0}
        for row in Image.objects.values("dataset_id").annotate(n=Count("id")).order_by()
    }
    for row in Box.objects.values("image__dataset_id").annotate(
        drawn=Count("id"), accepted=Count("id", filter=Q(state="accepted"))
    ).order_by():
        tally[row["image__dataset_id"]].update(boxes_drawn=row["drawn"], boxes_accepted=row["accepted"])
    DatasetTally.objects.bulk_create([DatasetTally(dataset_id=d, **fields) for d, fields in tally.items()])
    usage = {}
    for row in Task.objects.values("dataset_id", "concept_id", stage=Coalesce(NullIf("topic", Value("")), "kind")).annotate(n=Count("id")).order_by():
        usage[(row["dataset_id"], row["stage"], row["concept_id"])] = [row["n"], 0, 0]
    spent = ExpressionWrapper(F("submitted_at") - F("leased_at"), output_field=DurationField())
    for row in (
        Assignment.objects.filter(state="submitted")
        .values("task__dataset_id", "task__concept_id", stage=Coalesce(NullIf("task__topic", Value("")), "task__kind"))
        .annotate(n=Count("id"), spent=Sum(spent))
        .order_by()
    ):
        entry = usage.setdefault((row["task__dataset_id"], row["stage"], row["task__concept_id"]), [0, 0, 0])
        entry[1] = row["n"]
        entry[2] = (row["spent"] or timedelta(0)) // timedelta(microseconds=1)
    UsageCounter.objects.bulk_create(
        [
            UsageCounter(dataset_id=d, stage=s, concept_id=c, tasks=t, answers=a, worker_microseconds=us)
            for (d, s, c), (t, a, us) in usage.items()
        ],
        batch_size=1000,
    )


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0013_assignment_withdrawn'),
        ('crowd', '0005_mturk_qualification_confirmation_spend'),
        ('hierarchy', '0004_labeling_models_move_to_multilabel'),
    ]

    operations = [
        migrations.CreateModel(
            name='DatasetTally',
            fields=[
                ('dataset', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='tally', serialize=False, to='annotation.dataset')),
                ('images', models.BigIntegerField(default=0)),
                ('boxes_drawn', models.BigIntegerField(default=0)),
                ('boxes_accepted', models.BigIntegerField(default=0)),
            ],
        ),
        migrations.CreateModel(
            name='UsageCounter',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('stage', models.CharField(max_length=64)),
                ('tasks', models.BigIntegerField(default=0)),
                ('answers', models.BigIntegerField(default=0)),
                ('worker_microseconds', models.BigIntegerField(default=0)),
            ],
            options={
                'ordering': ['id'],
            },
        ),
        migrations.AddIndex(
            model_name='box',
            index=models.Index(fields=['created_at'], name='box_created_idx'),
        ),
        migrations.AddField(
            model_name='usagecounter',
            name='concept',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='hierarchy.concept'),
        ),
        migrations.AddField(
            model_name='usagecounter',
            name='dataset',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='annotation.dataset'),
        ),
        migrations.AddConstraint(
            model_name='usagecounter',
            constraint=models.UniqueConstraint(condition=models.Q(('concept__isnull', False)), fields=('dataset', 'stage', 'concept'), name='usage_counter_unique_concept'),
        ),
        migrations.AddConstraint(
            model_name='usagecounter',
            constraint=models.UniqueConstraint(condition=models.Q(('concept__isnull', True)), fields=('dataset', 'stage'), name='usage_counter_unique_none'),
        ),
        migrations.RunPython(counters_fill, migrations.RunPython.noop),
    ]
