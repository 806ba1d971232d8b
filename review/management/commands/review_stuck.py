"""`manage.py review_stuck`: settle questions nobody left can answer, and queue every question and box job left
in review without a review item."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from review import stuck


class Command(BaseCommand):
    help = (
        "Settle open questions that no worker of their dataset can take any more (all voted, blocked, not "
        "qualified or barred) with the votes they have, or send them to review; send box jobs awaiting a "
        "verification that no question asks any more to review; then give every question "
        "waiting in review (at its vote cap) and every box job in review an open review item, and dismiss "
        "items whose question left review. The same sweep runs on a schedule."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", help="Only settle starved questions of this dataset (name).")
        parser.add_argument(
            "--starved-after",
            type=float,
            default=None,
            metavar="SECONDS",
            help="A question counts as starved once its task has been untouched this long "
            "(default: the CROWDLABEL_STARVED_AFTER_SECONDS setting, 900).",
        )

    def handle(self, *args, **options):
        dataset_id = None
        if options["dataset"]:
            found = Dataset.objects.filter(name=options["dataset"]).values_list("pk", flat=True).first()
            if found is None:
                raise CommandError(f"no dataset named {options['dataset']!r}")
            dataset_id = found
        after = options["starved_after"]
        if after is not None and not (0 <= after < 10**9):
            raise CommandError("--starved-after takes a number of seconds, 0 or more")
        report = stuck.stuck_enqueue(dataset_id=dataset_id, starved_after=after)
        settled = ", ".join(f"{n} {what}" for what, n in sorted(report.starved_settled.items())) or "none"
        self.stdout.write(
            f"starved questions settled: {settled}; box jobs whose verification nobody can answer sent to "
            f"review: {report.box_jobs_stranded}; queued {report.questions_queued} questions and "
            f"{report.box_jobs_queued} box jobs for review; dismissed {report.items_dismissed} items no "
            "longer needed"
        )
