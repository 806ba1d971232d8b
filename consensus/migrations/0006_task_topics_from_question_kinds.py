"""Existing question tasks get their question's kind as their topic (what lease policies withhold by)."""

from django.db import migrations
from django.db.models import OuterRef, Subquery


def topics_fill(apps, schema_editor):
    Task = apps.get_model("annotation", "Task")
    Question = apps.get_model("consensus", "Question")
    kind = Question.objects.filter(task_id=OuterRef("pk")).values("kind")[:1]
    Task.objects.filter(topic="", question__isnull=False).update(topic=Subquery(kind))


class Migration(migrations.Migration):
    dependencies = [
        ("consensus", "0005_merge_reviewer_and_weighted_default"),
        ("annotation", "0011_queue_pools_topics_and_lease_notes"),
    ]

    operations = [migrations.RunPython(topics_fill, migrations.RunPython.noop)]
