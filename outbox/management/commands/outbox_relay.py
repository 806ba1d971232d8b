"""Send background work the broker missed and sweep work whose worker died, once (what beat runs on a schedule)."""

from django.core.management.base import BaseCommand

from outbox import services


class Command(BaseCommand):
    help = (
        "Send pending outbox rows to the broker, re-send lost ones, park work that lost its worker too often."
    )

    def handle(self, *args, **options) -> None:
        counts = services.relay()
        self.stdout.write(", ".join(f"{key}: {value}" for key, value in counts.items()))
        if counts["failed"]:
            self.stderr.write(f"{counts['failed']} could not reach the broker; they stay pending")
