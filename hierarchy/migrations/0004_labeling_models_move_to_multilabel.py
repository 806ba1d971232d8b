"""The labeling models (ImageLabeling, LabelingAnswer, LeafLabel) leave the hierarchy app for multilabel: only
Django's model state changes here; the tables stay where they are and multilabel keeps their names."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('hierarchy', '0003_labeling_question_engine'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='labelinganswer',
                    name='labeling',
                ),
                migrations.RemoveField(
                    model_name='leaflabel',
                    name='labeling',
                ),
                migrations.RemoveField(
                    model_name='labelinganswer',
                    name='node',
                ),
                migrations.RemoveField(
                    model_name='labelinganswer',
                    name='task',
                ),
                migrations.RemoveField(
                    model_name='leaflabel',
                    name='concept',
                ),
                migrations.RemoveField(
                    model_name='leaflabel',
                    name='image',
                ),
                migrations.RemoveField(
                    model_name='leaflabel',
                    name='via',
                ),
                migrations.DeleteModel(
                    name='ImageLabeling',
                ),
                migrations.DeleteModel(
                    name='LabelingAnswer',
                ),
                migrations.DeleteModel(
                    name='LeafLabel',
                ),
            ],
            database_operations=[],
        ),
    ]
