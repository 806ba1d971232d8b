"""The decided production questions' number, votes and those in review on the question tally, for the
organizer's quality page; filled from the existing questions (the recount of consensus.tally, over the
historical models)."""

from django.db import migrations, models
from django.db.models import Count, F, Q, Sum


def production_fill(apps, schema_editor):
    Question = apps.get_model("consensus", "Question")
    QuestionTally = apps.get_model("consensus", "QuestionTally")
    decided = ("accepted", "rejected", "review")
    rows = (
        Question.objects.filter(role="production", state__in=decided)
        .values("dataset_id", "kind", "concept_id")
        .annotate(
            n=Count("id"), votes=Sum(F("yes_count") + F("no_count")), review=Count("id", filter=Q(state="review"))
        )
        .order_by()
    )
    for r in rows:
        QuestionTally.objects.update_or_create(
            dataset_id=r["dataset_id"],
            kind=r["kind"],
            concept_id=r["concept_id"],
            defaults={"production_decided": r["n"], "production_votes": r["votes"] or 0, "production_review": r["review"]},
        )


class Migration(migrations.Migration):

    dependencies = [
        ('consensus', '0010_question_tally_kind_choices'),
    ]

    operations = [
        migrations.AddField(
            model_name='questiontally',
            name='production_decided',
            field=models.BigIntegerField(default=0, help_text='Production questions accepted, rejected or in review.'),
        ),
        migrations.AddField(
            model_name='questiontally',
            name='production_review',
            field=models.BigIntegerField(default=0, help_text='Those of them in review.'),
        ),
        migrations.AddField(
            model_name='questiontally',
            name='production_votes',
            field=models.BigIntegerField(default=0, help_text='Their yes and no votes.'),
        ),
        migrations.RunPython(production_fill, migrations.RunPython.noop),
    ]
