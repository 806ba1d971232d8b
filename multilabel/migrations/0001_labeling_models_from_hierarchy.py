"""Algorithm 1's models arrive from the hierarchy app with their tables (`db_table` keeps the old names): the model
state is created here, the database is left as it is, and the admin's content types (with their permissions)
follow the models to this app."""

import django.db.models.deletion
from django.db import migrations, models


MODELS = ("imagelabeling", "labelinganswer", "leaflabel")


def content_types_move(apps, schema_editor, old="hierarchy", new="multilabel"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    taken = set(ContentType.objects.filter(app_label=new, model__in=MODELS).values_list("model", flat=True))
    ContentType.objects.filter(app_label=old, model__in=taken).delete()
    ContentType.objects.filter(app_label=old, model__in=MODELS).update(app_label=new)


def content_types_move_back(apps, schema_editor):
    content_types_move(apps, schema_editor, old="multilabel", new="hierarchy")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('annotation', '0009_queue_order_datasets_in_turn'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('hierarchy', '0004_labeling_models_move_to_multilabel'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ImageLabeling',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('order', models.CharField(choices=[('breadth_first', 'Breadth-first (ILSVRC Algorithm 1)'), ('correlation', "Correlation-aware (co-occurrence of the dataset's finished images)")], default='breadth_first', max_length=16)),
                        ('engine', models.CharField(choices=[('consensus', 'Consensus engine (question kind hierarchy, favours yes)'), ('vote', 'Sequential yes-biased vote (a margin policy, no calibration)')], default='consensus', max_length=16)),
                        ('status', models.CharField(choices=[('running', 'Asking questions'), ('done', 'Every leaf labelled')], default='running', max_length=16)),
                        ('state', models.JSONField(default=dict)),
                        ('pending_node', models.CharField(blank=True, max_length=32)),
                        ('questions_asked', models.PositiveIntegerField(default=0)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('dataset', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='labelings', to='annotation.dataset')),
                        ('hierarchy', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='labelings', to='hierarchy.hierarchy')),
                        ('image', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='labelings', to='annotation.image')),
                    ],
                    options={
                        'db_table': 'hierarchy_imagelabeling',
                        'ordering': ['id'],
                    },
                ),
                migrations.CreateModel(
                    name='LabelingAnswer',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('present', models.BooleanField()),
                        ('yes_votes', models.PositiveIntegerField(default=0)),
                        ('no_votes', models.PositiveIntegerField(default=0)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('labeling', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='answers', to='multilabel.imagelabeling')),
                        ('node', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='hierarchy.questionnode')),
                        ('task', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.task')),
                    ],
                    options={
                        'db_table': 'hierarchy_labelinganswer',
                        'ordering': ['id'],
                    },
                ),
                migrations.CreateModel(
                    name='LeafLabel',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('present', models.BooleanField()),
                        ('source', models.CharField(choices=[('asked', 'Asked'), ('no_from_ancestor', 'No, propagated from an ancestor'), ('yes_from_descendant', 'Yes, implied by a descendant')], max_length=24)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('concept', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='leaf_labels', to='hierarchy.concept')),
                        ('image', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='leaf_labels', to='annotation.image')),
                        ('labeling', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='leaf_labels', to='multilabel.imagelabeling')),
                        ('via', models.ForeignKey(blank=True, help_text='The asked node the label was propagated from.', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='hierarchy.questionnode')),
                    ],
                    options={
                        'db_table': 'hierarchy_leaflabel',
                        'ordering': ['id'],
                    },
                ),
                migrations.AddIndex(
                    model_name='imagelabeling',
                    index=models.Index(fields=['dataset', 'hierarchy', 'status'], name='image_labeling_progress_idx'),
                ),
                migrations.AddConstraint(
                    model_name='imagelabeling',
                    constraint=models.UniqueConstraint(fields=('image', 'hierarchy'), name='image_labeling_unique'),
                ),
                migrations.AddConstraint(
                    model_name='labelinganswer',
                    constraint=models.UniqueConstraint(fields=('labeling', 'node'), name='labeling_answer_once_per_node'),
                ),
                migrations.AddIndex(
                    model_name='leaflabel',
                    index=models.Index(fields=['image', 'present'], name='leaf_label_present_idx'),
                ),
                migrations.AddConstraint(
                    model_name='leaflabel',
                    constraint=models.UniqueConstraint(fields=('labeling', 'concept'), name='leaf_label_once_per_concept'),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_move, content_types_move_back),
    ]
