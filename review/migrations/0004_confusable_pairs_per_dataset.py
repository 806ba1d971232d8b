"""Confusable pairs (and their notes) belong to a dataset: each shared pair is copied to every dataset whose
classes include both of its concepts, then the shared rows go (a pair no dataset has both classes of applied
to no scan and is dropped)."""

import django.db.models.deletion
from django.db import migrations, models


def copy_shared_pairs_to_datasets(apps, schema_editor):
    ConfusablePair = apps.get_model("review", "ConfusablePair")
    Dataset = apps.get_model("annotation", "Dataset")
    shared = list(ConfusablePair.objects.filter(dataset__isnull=True))
    copies = [
        ConfusablePair(
            dataset_id=dataset_id,
            concept_a_id=pair.concept_a_id,
            concept_b_id=pair.concept_b_id,
            note=pair.note,
        )
        for pair in shared
        for dataset_id in Dataset.objects.filter(concepts=pair.concept_a_id)
        .filter(concepts=pair.concept_b_id)
        .values_list("pk", flat=True)
        .order_by("pk")
    ]
    ConfusablePair.objects.bulk_create(copies)
    ConfusablePair.objects.filter(pk__in=[pair.pk for pair in shared]).delete()


class Migration(migrations.Migration):
    # Data and schema changes apart: PostgreSQL refuses to alter a table with pending trigger events.
    atomic = False

    dependencies = [
        ("annotation", "0016_assignment_next_lease"),
        ("review", "0003_review_decision_absent"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="confusablepair", name="confusable_pair_unique"),
        migrations.AddField(
            model_name="confusablepair",
            name="dataset",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="confusable_pairs",
                to="annotation.dataset",
            ),
        ),
        migrations.RunPython(copy_shared_pairs_to_datasets, migrations.RunPython.noop, atomic=True),
        migrations.AlterField(
            model_name="confusablepair",
            name="dataset",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="confusable_pairs",
                to="annotation.dataset",
            ),
        ),
        migrations.AddConstraint(
            model_name="confusablepair",
            constraint=models.UniqueConstraint(
                fields=("dataset", "concept_a", "concept_b"), name="confusable_pair_unique_per_dataset"
            ),
        ),
    ]
