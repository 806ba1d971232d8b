"""`manage.py review_stuck`: queue every question and box job left in review without a review item."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from review import stuck


class Command(BaseCommand):
    help = (
        "Give every question waiting in review (at its vote cap) and every box job in review an open review "
        "item, and dismiss items whose question left review; the same sweep runs on a schedule."
    )

    def handle(self, *args, **options):
        report = stuck.stuck_enqueue()
        self.stdout.write(
            f"queued {report.questions_queued} questions and {report.box_jobs_queued} box jobs for review; "
            f"dismissed {report.items_dismissed} items no longer needed"
        )
