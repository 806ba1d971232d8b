"""Questions asked and decided per dataset, kind and concept (consensus.tally), filled from the existing
questions, and an index for the organizer's recent-decisions window."""

from django.db.models import Count, Q

import django.db.models.deletion
from django.db import migrations, models


def tally_fill(apps, schema_editor):
    Question = apps.get_model("consensus", "Question")
    QuestionTally = apps.get_model("consensus", "QuestionTally")
    decided = Q(state__in=["accepted", "rejected", "review"])
    rows = (
        Question.objects.values("dataset_id", "kind", "concept_id")
        .annotate(n=Count("id"), decided=Count("id", filter=decided))
        .order_by()
    )
    QuestionTally.objects.bulk_create(
        [
            QuestionTally(
                dataset_id=r["dataset_id"], kind=r["kind"], concept_id=r["concept_id"],
                questions=r["n"], decided=r["decided"],
            )
            for r in rows
        ],
        batch_size=1000,
    )


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0014_dataset_tally_and_usage_counters'),
        ('consensus', '0007_vote_withdrawn'),
        ('hierarchy', '0004_labeling_models_move_to_multilabel'),
    ]

    operations = [
        migrations.CreateModel(
            name='QuestionTally',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('image_verify', 'Does this image show CONCEPT?'), ('box_quality', 'Is this box tight around one whole CONCEPT?'), ('box_coverage', 'Is every CONCEPT in this image boxed?'), ('hierarchy', 'Is there a CONCEPT in this image? (hierarchy question)')], max_length=32)),
                ('questions', models.BigIntegerField(default=0)),
                ('decided', models.BigIntegerField(default=0)),
            ],
            options={
                'ordering': ['id'],
            },
        ),
        migrations.AddIndex(
            model_name='question',
            index=models.Index(fields=['dataset', 'kind', 'decided_at'], name='question_decided_recent_idx'),
        ),
        migrations.AddField(
            model_name='questiontally',
            name='concept',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='hierarchy.concept'),
        ),
        migrations.AddField(
            model_name='questiontally',
            name='dataset',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='annotation.dataset'),
        ),
        migrations.AddConstraint(
            model_name='questiontally',
            constraint=models.UniqueConstraint(fields=('dataset', 'kind', 'concept'), name='question_tally_unique_key'),
        ),
        migrations.RunPython(tally_fill, migrations.RunPython.noop),
    ]
