"""`manage.py study_link`: the study link of a dataset and task kind for an external crowd (made on first use),
and with `--completions` the completed sessions with their codes and pay decisions as CSV for the marketplace.
The same as `POST /api/v1/studies` and `GET /api/v1/studies/{id}/completions?export=csv`."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.urls import reverse

from annotation import kinds
from annotation.models import Dataset
from crowd.models import StudyLink
from crowd.providers import external_link


class Command(BaseCommand):
    help = "Print the study link of a dataset and task kind (made on first use), or its completions as CSV."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        parser.add_argument("--kind", required=True, help="Task kind, e.g. question.")
        parser.add_argument(
            "--participant-param", default="PROLIFIC_PID", help="Query parameter carrying the participant id."
        )
        parser.add_argument(
            "--redirect", default="", help="Completion redirect URL; {code} becomes the code."
        )
        parser.add_argument(
            "--completions", action="store_true", help="Print completed sessions and pay decisions as CSV."
        )

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {options['dataset']!r}")
        if options["kind"] not in kinds.names():
            raise CommandError(f"unknown task kind {options['kind']!r}; known: {', '.join(kinds.names())}")
        if options["completions"]:
            link = StudyLink.objects.filter(dataset=dataset, kind=options["kind"]).first()
            if link is None:
                raise CommandError(f"dataset {dataset.name} has no study link for kind {options['kind']!r}")
            self.stdout.write(external_link.completions_csv(external_link.completions_list(link)), ending="")
            return
        with transaction.atomic():
            link, created = StudyLink.objects.get_or_create(
                dataset=dataset,
                kind=options["kind"],
                defaults={
                    "participant_param": options["participant_param"],
                    "completion_redirect": options["redirect"],
                },
            )
            if created:
                try:
                    link.full_clean()
                except ValidationError as exc:
                    transaction.set_rollback(True)
                    raise CommandError("; ".join(exc.messages)) from None
        state = "made" if created else "existing"
        self.stdout.write(
            f"{state} study link: {reverse('study', args=[link.key])}?{link.participant_param}=<participant id>"
        )
