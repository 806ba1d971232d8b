"""`manage.py publish_hits`: plan a batch of MTurk HITs for a dataset and task kind (budget checked before any
call to MTurk), then publish it; `--title`/`--reward` (and `--budget`) make the HIT type and budget in the same
command. A batch that failed halfway is finished with `--resume BATCH`: its HITs carry UniqueRequestTokens, so
nothing is published twice."""

from __future__ import annotations

import argparse
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation import kinds
from annotation.models import Dataset
from crowd.models import MturkHitType
from crowd.providers import mturk


def money(value: str) -> Decimal:
    try:
        amount = Decimal(value).quantize(Decimal("0.01"))
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"{value!r} is not an amount in US$, e.g. 0.25") from None
    if not amount.is_finite():
        raise argparse.ArgumentTypeError(f"{value!r} is not an amount in US$, e.g. 0.25")
    return amount


class Command(BaseCommand):
    help = "Publish MTurk HITs (ExternalQuestion to /mturk/task/) for one dataset and task kind."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", help="Dataset name.")
        parser.add_argument("--kind", help="Task kind, e.g. binary_vote.")
        parser.add_argument("--count", type=int, help="Number of HITs.")
        parser.add_argument("--max-assignments", type=int, help="Assignments (bundles) per HIT.")
        parser.add_argument("--resume", metavar="BATCH", help="Finish publishing a batch planned earlier.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Print the cost estimate; publish nothing."
        )
        parser.add_argument("--title", default="", help="Make or change the HIT type: its title.")
        parser.add_argument("--description", default="", help="... its description (default: the title).")
        parser.add_argument("--reward", type=money, default=None, help="... its reward per assignment, US$.")
        parser.add_argument(
            "--budget", type=money, default=None, help="Set the dataset's MTurk budget cap (US$, with fees)."
        )

    def handle(self, *args, **options):
        where = "PRODUCTION" if settings.CROWDLABEL["MTURK_PRODUCTION"] else "the sandbox"
        batch = options["resume"]
        if batch is None:
            missing = [
                f"--{n.replace('_', '-')}"
                for n in ("dataset", "kind", "count", "max_assignments")
                if options[n] is None
            ]
            if missing:
                raise CommandError(f"missing {', '.join(missing)} (or --resume BATCH)")
            dataset = Dataset.objects.filter(name=options["dataset"]).first()
            if dataset is None:
                raise CommandError(f"no dataset named {options['dataset']!r}")
            if options["kind"] not in kinds.names():
                raise CommandError(
                    f"unknown task kind {options['kind']!r}; known: {', '.join(kinds.names())}"
                )
            try:
                if options["title"] or options["description"] or options["reward"] is not None:
                    mturk.hit_type_configure(
                        dataset=dataset,
                        kind=options["kind"],
                        title=options["title"],
                        description=options["description"],
                        reward=options["reward"],
                    )
                if options["budget"] is not None:
                    mturk.budget_set(dataset=dataset, cap=options["budget"])
            except mturk.MturkError as exc:
                raise CommandError(str(exc)) from None
            if options["dry_run"]:
                hit_type = MturkHitType.objects.filter(dataset=dataset, kind=options["kind"]).first()
                if hit_type is None:
                    raise CommandError(
                        f"dataset {dataset.name} has no MTurk HIT type for kind {options['kind']!r}"
                    )
                cost = mturk.cost_estimate(
                    hit_type.reward, count=options["count"], max_assignments=options["max_assignments"]
                )
                self.stdout.write(f"estimated cost with MTurk's fees: ${cost}")
                return
            try:
                planned = mturk.hits_plan(
                    dataset=dataset,
                    kind=options["kind"],
                    count=options["count"],
                    max_assignments=options["max_assignments"],
                )
            except mturk.MturkError as exc:
                raise CommandError(str(exc)) from None
            batch = planned.batch
            self.stdout.write(
                f"batch {batch}: {planned.hits} HITs x {planned.max_assignments} assignments, about "
                f"${planned.estimated_cost} with fees (${planned.budget_left} of the budget left)"
            )
        self.stdout.write(f"publishing on {where}...")
        try:
            published = mturk.hits_publish(mturk.client(), batch=batch)
        except Exception as exc:
            raise CommandError(f"publishing stopped: {exc}; rerun with --resume {batch}") from exc
        self.stdout.write(self.style.SUCCESS(f"published {published} HITs of batch {batch}"))
